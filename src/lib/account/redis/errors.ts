/** The error of the shared state (SHARED_STATE) with a reason the callers tell apart. */
import { GatewayError } from '../../common/errors';

/** SHARED_STATE with a reason ('fenced', 'generation', 'unacknowledged', 'wrong-reply', 'stale', 'unseen'). */
export class SharedStateError extends GatewayError {
  readonly reason: string;
  constructor(message: string, reason: string) {
    super('SHARED_STATE', message);
    this.reason = reason;
  }
}

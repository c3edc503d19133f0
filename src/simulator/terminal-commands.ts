/**
 * Area (a), `POST terminal/reset`, `terminal/sysreset` and `terminal/mute` (throttle group
 * SEND). Their request bodies are not public: the simulator accepts any body, answers
 * `{ErrorID: 0}`, and records what it got (`commands`, `GET /_sim/terminal-commands`) so a
 * test can check what a flow sent.
 */
import type { SimReply, SimRequest } from './replies';
import { json } from './replies';
import { parseJson } from '../lib/common/int64';
import type { ThrottleGroup } from './terminal-model';

export interface TerminalCommand {
  /** `reset`, `sysreset` or `mute`. */
  command: string;
  account: string;
  at: number;
  contentType: string;
  /** The body as received. */
  text: string;
  /** The body parsed as JSON (exact int64), when it is JSON. */
  body?: unknown;
}

export interface CommandsHost {
  readonly now: () => number;
  guard(r: SimRequest, group: ThrottleGroup | undefined, handle: (account: string) => SimReply | Promise<SimReply>, superOnly?: boolean): Promise<SimReply>;
}

type At = (method: string, rest: string, name: string, h: (r: SimRequest) => SimReply | Promise<SimReply>) => void;

export const TERMINAL_COMMANDS = ['reset', 'sysreset', 'mute'] as const;

export class TerminalCommands {
  /** What each call got, oldest first (at most `max`). */
  readonly commands: TerminalCommand[] = [];
  max = 1000;

  constructor(private readonly gw: CommandsHost) {}

  mount(at: At): void {
    for (const c of TERMINAL_COMMANDS) {
      at('POST', `terminal/${c}`, `terminal/command-${c}`, (r) => this.gw.guard(r, 'SEND', (account) => this.record(c, r, account)));
    }
  }

  private record(command: string, r: SimRequest, account: string): SimReply {
    const rec: TerminalCommand = { command, account, at: this.gw.now(), contentType: String(r.headers['content-type'] ?? ''), text: r.text };
    try {
      if (r.text.trim()) rec.body = parseJson(r.text);
    } catch {
      // not JSON: the text is what was sent
    }
    this.commands.push(rec);
    if (this.commands.length > this.max) this.commands.splice(0, this.commands.length - this.max);
    return json(200, { ErrorID: 0 });
  }
}

/**
 * The simulator's request and reply as every area sees them (the HTTP core turns them
 * into HTTP): a request with its raw body and route params, a reply as JSON or text.
 */
import type http from 'node:http';

export interface SimRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** Raw body text. */
  text: string;
  params: string[];
  /** Parses the body as JSON (exact int64: unsafe integers become strings). */
  json(): unknown;
}

export interface SimReply {
  status: number;
  body?: unknown;
  /** Raw text instead of JSON. */
  text?: string;
  headers?: Record<string, string>;
}

export type Handler = (req: SimRequest) => SimReply | Promise<SimReply>;

export function json(status: number, body: unknown, headers?: Record<string, string>): SimReply {
  return { status, body, headers };
}

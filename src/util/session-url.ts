/**
 * The gateway's session base URL, for clients that can set nothing but a base URL (MassGen's configs):
 * `<root>/session/<id>/agent/<id>/v1`. The gateway reads it from request paths, `export-massgen --gateway`
 * writes it, and `traces import` finds the session in the base URLs MassGen logged.
 */
export function sessionBaseUrl(root: string, session: string, agent: string): string {
  return `${root}/session/${encodeURIComponent(session)}/agent/${encodeURIComponent(agent)}/v1`;
}

const SESSION_PATH = /\/session\/([^/]+)(?:\/agent\/([^/]+))?(\/v1(?:\/.*)?)$/;

/**
 * The session and agent named at the end of `url` (still percent-encoded), what follows them (`/v1…`), and
 * where the session part starts (0: the path begins with it).
 */
export function sessionOfUrl(url: string): { session: string; agent?: string; rest: string; at: number } | null {
  const m = SESSION_PATH.exec(url);
  return m ? { session: m[1]!, agent: m[2], rest: m[3]!, at: m.index } : null;
}

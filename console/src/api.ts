/**
 * The console's one way to the API: the same origin, the key from sign-in kept in this
 * module's memory only (never in storage or a URL), and an API error thrown with its detail.
 */

let key: string | null = null;

export interface KeyInUse {
  id: string;
  name: string;
  scopes: string[];
  expiresAt: string | null;
  tenant: string;
  timeZone: string;
}

export interface Page<T> {
  data: T[];
  cursor: string | null;
}

/** An answer other than 2xx, as the API's problem shows it. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (key !== null) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  } catch (error) {
    throw new ApiError(0, "network_error", `the server did not answer: ${error instanceof Error ? error.message : String(error)}`);
  }
  const text = await response.text();
  if (response.ok) return (text === "" ? undefined : JSON.parse(text)) as T;
  let problem: { code?: string; detail?: string } = {};
  try {
    problem = JSON.parse(text) as typeof problem;
  } catch {
    // Not a problem document: the status says what it can.
  }
  throw new ApiError(response.status, problem.code ?? "error", problem.detail ?? `${response.status} ${response.statusText}`);
}

/** A query string of the values given (empty ones left out), with `?` when there is any. */
export function query(values: Record<string, string | number | null | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(values))
    if (value !== undefined && value !== null && value !== "") params.set(name, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/** Checks the key with the API, and keeps it for the tab's requests when it is good. */
export async function signIn(candidate: string): Promise<KeyInUse> {
  key = candidate;
  try {
    return await api<KeyInUse>("GET", "/v1/key");
  } catch (error) {
    key = null;
    throw error;
  }
}

export function signOut(): void {
  key = null;
}

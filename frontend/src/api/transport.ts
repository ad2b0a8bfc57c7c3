// The one transport of the UI, whichever surface it runs in: the Wails
// bindings in the desktop window (window.go.app.<Service>.<Method>) and the
// JSON API of `atrium serve` (fetch /api/..., cookie auth). Both sides are
// typed by the files frontend/tsgen generates from app/ (gen/bindings.ts,
// gen/routes.ts): a method or route that does not exist in Go does not compile.

import type { Bindings } from './gen/bindings';
import type { Route, RouteBody, RouteQuery } from './gen/routes';

type Binding = (...args: unknown[]) => Promise<unknown>;
type Service = Record<string, Binding | undefined>;

interface WailsRuntime {
  EventsOn?: (name: string, cb: (...data: unknown[]) => void) => (() => void) | void;
  WindowSetTitle?: (title: string) => void;
  ClipboardSetText?: (text: string) => Promise<boolean>;
  BrowserOpenURL?: (url: string) => void;
}

declare global {
  interface Window {
    go?: { app?: Record<string, Service | undefined> };
    runtime?: WailsRuntime;
  }
}

/** Error codes that the client makes itself (the server's are apperr codes). */
export const CodeNetwork = 'network';
export const CodeTimeout = 'timeout';
export const CodeUnauthorized = 'unauthorized';
export const CodeNotFound = 'not_found';

/** Every failure of a call, whatever the transport: {code, message}. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number | undefined;
  constructor(code: string, message: string, status?: number) {
    super(message);
    this.name = 'ApiError';
    this.code = code || 'internal';
    this.status = status;
  }
}

function fromObject(o: Record<string, unknown>): ApiError | null {
  if (typeof o.message === 'string' || typeof o.code === 'string') {
    return new ApiError(String(o.code ?? 'internal'), String(o.message ?? o.code ?? 'error'));
  }
  return null;
}

/** toApiError normalises what a rejected call gave: an {code, message}
 * object, a JSON string of one, a plain string or an Error. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (typeof e === 'string') {
    const s = e.trim();
    if (s.startsWith('{')) {
      try {
        const parsed: unknown = JSON.parse(s);
        if (parsed && typeof parsed === 'object') {
          const err = fromObject(parsed as Record<string, unknown>);
          if (err) return err;
        }
      } catch {
        /* not JSON: the text is the message */
      }
    }
    return new ApiError('internal', s || 'Unknown error');
  }
  if (typeof DOMException !== 'undefined' && e instanceof DOMException && e.name === 'AbortError') return new ApiError(CodeTimeout, 'The request timed out');
  if (e instanceof TypeError) return new ApiError(CodeNetwork, `Network error: ${e.message}`);
  if (e && typeof e === 'object') {
    const err = fromObject(e as Record<string, unknown>);
    if (err) return err;
    if (e instanceof Error) return new ApiError('internal', e.message);
  }
  return new ApiError('internal', String(e));
}

/** Codes that may succeed on a retry with the same request id. */
const transient = new Set([CodeNetwork, CodeTimeout, 'internal', 'busy', 'unavailable']);

/** retryable is true for failures that are not a definite refusal. */
export function retryable(e: ApiError): boolean {
  if (transient.has(e.code)) return true;
  return e.status !== undefined && e.status >= 500 && !['invalid', 'not_found', 'conflict', 'unauthorized', 'rejected'].includes(e.code);
}

/** missing is true when a route or binding does not exist (yet). */
export function missing(e: unknown): boolean {
  return e instanceof ApiError && e.code === CodeNotFound && /^no (API route|such binding)/.test(e.message);
}

export const isDesktop = (): boolean => typeof window !== 'undefined' && !!window.go?.app;

let unauthorizedHandler: (e: ApiError) => void = () => {};
/** onUnauthorized is told once a call is refused for a missing token. */
export function onUnauthorized(fn: (e: ApiError) => void): void {
  unauthorizedHandler = fn;
}

const defaultTimeout = 60_000;

type ParamNames<P extends string> = P extends `${string}{${infer N}}${infer R}` ? N | ParamNames<R> : never;

/** One HTTP request, typed by the generated route table: the path's
 * parameters, the query parameters the Go handler reads, its body type. */
export type HttpCall<K extends Route = Route> = {
  route: K;
  query?: RouteQuery[K];
} & ([ParamNames<K>] extends [never] ? { params?: undefined } : { params: Record<ParamNames<K>, string> }) &
  ([RouteBody[K]] extends [never] ? { body?: undefined } : { body: RouteBody[K] });

export interface CallOptions {
  timeoutMs?: number;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new ApiError(CodeTimeout, `No answer after ${Math.round(ms / 1000)} s`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

async function viaDesktop<T>(service: string, method: string, args: unknown[], ms: number): Promise<T> {
  const fn = window.go?.app?.[service]?.[method];
  if (typeof fn !== 'function') throw new ApiError(CodeNotFound, `no such binding ${service}.${method}`);
  try {
    return (await withTimeout(fn(...args), ms)) as T;
  } catch (e) {
    throw toApiError(e);
  }
}

/** requestURL is the URL of a route: {params} filled in (escaped), the
 * query's empty values left out. */
export function requestURL(c: { route: string; params?: Record<string, string> | undefined; query?: object | undefined }): { method: string; url: string } {
  const space = c.route.indexOf(' ');
  const method = c.route.slice(0, space);
  const path = c.route.slice(space + 1).replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const v = c.params?.[name];
    if (v === undefined) throw new ApiError('invalid', `route ${c.route}: no value for {${name}}`);
    return encodeURIComponent(v);
  });
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(c.query ?? {})) {
    if (v === undefined || v === null || v === '' || v === false) continue;
    qs.set(k, String(v));
  }
  const q = qs.toString();
  return { method, url: q ? `${path}?${q}` : path };
}

interface AnyHttpCall {
  route: string;
  params?: Record<string, string> | undefined;
  query?: object | undefined;
  body?: unknown;
}

async function viaHTTP<T>(c: AnyHttpCall, ms: number): Promise<T> {
  const { method, url } = requestURL(c);
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  let res: Response;
  try {
    const init: RequestInit = {
      method,
      credentials: 'same-origin',
      headers: { Accept: 'application/json' },
      signal: ctl.signal,
    };
    if (method !== 'GET' && method !== 'HEAD') {
      // Every write is JSON, with a body even when the route reads none: the
      // dashboard refuses writes that are not (a cross-site form cannot send one).
      init.body = JSON.stringify(c.body ?? {});
      init.headers = { Accept: 'application/json', 'Content-Type': 'application/json' };
    }
    res = await fetch(url, init);
  } catch (e) {
    clearTimeout(timer);
    throw toApiError(e);
  }
  let text: string;
  try {
    text = await res.text();
  } catch (e) {
    throw toApiError(e);
  } finally {
    clearTimeout(timer);
  }
  let body: unknown = undefined;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (!res.ok) {
    let err: ApiError;
    if (body && typeof body === 'object') {
      const o = body as Record<string, unknown>;
      err = new ApiError(String(o.code ?? (res.status >= 500 ? 'internal' : 'invalid')), String(o.message ?? res.statusText), res.status);
    } else {
      const code = res.status === 401 ? CodeUnauthorized : res.status === 404 ? CodeNotFound : res.status >= 500 ? 'unavailable' : 'invalid';
      err = new ApiError(code, typeof body === 'string' && body ? body.slice(0, 300) : `HTTP ${res.status} ${res.statusText}`, res.status);
    }
    if (err.code === CodeUnauthorized) unauthorizedHandler(err);
    throw err;
  }
  return body as T;
}

type Svc = keyof Bindings;
type Method<S extends Svc> = keyof Bindings[S] & string;
type Fn<S extends Svc, M extends Method<S>> = Bindings[S][M] extends (...a: infer A) => Promise<infer R> ? (...a: A) => Promise<R> : never;

/** call runs one bound method in the window, or its route on the dashboard. */
export function call<S extends Svc, M extends Method<S>, K extends Route>(
  service: S,
  method: M,
  args: Parameters<Fn<S, M>>,
  http: HttpCall<K>,
  o: CallOptions = {},
): ReturnType<Fn<S, M>> {
  const ms = o.timeoutMs ?? defaultTimeout;
  type R = Awaited<ReturnType<Fn<S, M>>>;
  return (isDesktop() ? viaDesktop<R>(service, method, args, ms) : viaHTTP<R>(http as unknown as AnyHttpCall, ms)) as ReturnType<Fn<S, M>>;
}

/** desktopOnly runs a bound method that has no route (a native dialog). */
export function desktopOnly<S extends Svc, M extends Method<S>>(service: S, method: M, args: Parameters<Fn<S, M>>, ms: number): ReturnType<Fn<S, M>> {
  return viaDesktop<Awaited<ReturnType<Fn<S, M>>>>(service, method, args, ms) as ReturnType<Fn<S, M>>;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Backoff between the attempts of an idempotent call. */
export const retryDelays = [500, 1000, 2000];

/** withRetry runs fn, and again after each delay while it fails retryably.
 * fn must be idempotent (a bulk request with one request id). */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, onRetry?: (e: ApiError, attempt: number) => void, delays = retryDelays): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (raw) {
      const e = toApiError(raw);
      const delay = delays[attempt];
      if (delay === undefined || !retryable(e)) throw e;
      onRetry?.(e, attempt + 1);
      await sleep(delay);
    }
  }
}

/** newRequestID is one id per user action. */
export function newRequestID(): string {
  if (typeof crypto.randomUUID === 'function') return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** setWindowTitle sets document.title, and the window's title on desktop. */
export function setWindowTitle(text: string): void {
  document.title = text;
  try {
    window.runtime?.WindowSetTitle?.(text);
  } catch {
    /* the runtime may not be ready */
  }
}

/** copyText puts text on the clipboard (the window's runtime, else the browser's). */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (window.runtime?.ClipboardSetText) return await window.runtime.ClipboardSetText(text);
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    return false;
  }
}

/** openURL opens a web link in the user's browser: the window's default
 * browser, or a new tab of the dashboard's. */
export function openURL(url: string): void {
  if (window.runtime?.BrowserOpenURL) {
    window.runtime.BrowserOpenURL(url);
    return;
  }
  window.open(url, '_blank', 'noopener,noreferrer');
}

// The one API of the UI over its two transports: the Wails bindings in the
// desktop window (window.go.app.<Service>.<Method>) and the JSON API of
// `atrium serve` (fetch /api/..., cookie auth). Live events come from
// window.runtime.EventsOn or an EventSource on /api/stream.

import type {
  BulkOp,
  CompactionDTO,
  CountDTO,
  EventDTO,
  FacetsDTO,
  FolderDTO,
  HitDTO,
  InfoDTO,
  InstallRequest,
  ListFilter,
  LiveEvents,
  MessageDTO,
  PageDTO,
  PluginDTO,
  PreviewDTO,
  ReceiptDTO,
  SessionDTO,
  SettingsDTO,
  TurnDTO,
} from './types';

type Binding = (...args: unknown[]) => Promise<unknown>;
type Service = Record<string, Binding | undefined>;

interface WailsRuntime {
  EventsOn?: (name: string, cb: (...data: unknown[]) => void) => (() => void) | void;
  WindowSetTitle?: (title: string) => void;
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
  if (e instanceof DOMException && e.name === 'AbortError') return new ApiError(CodeTimeout, 'The request timed out');
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

export const isDesktop = (): boolean => !!window.go?.app;

let unauthorizedHandler: (e: ApiError) => void = () => {};
/** onUnauthorized is told once a call is refused for a missing token. */
export function onUnauthorized(fn: (e: ApiError) => void): void {
  unauthorizedHandler = fn;
}

const defaultTimeout = 60_000;

interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
}

interface CallOptions {
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

function url(r: Route): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(r.query ?? {})) {
    if (v === undefined || v === '' || v === false) continue;
    params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${r.path}?${qs}` : r.path;
}

async function viaHTTP<T>(r: Route, ms: number): Promise<T> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  let res: Response;
  try {
    const init: RequestInit = {
      method: r.method,
      credentials: 'same-origin',
      headers: { Accept: 'application/json' },
      signal: ctl.signal,
    };
    if (r.body !== undefined) {
      init.body = JSON.stringify(r.body);
      init.headers = { Accept: 'application/json', 'Content-Type': 'application/json' };
    }
    res = await fetch(url(r), init);
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

/** call runs one service method over the transport of this window. */
function call<T>(service: string, method: string, args: unknown[], route: Route, o: CallOptions = {}): Promise<T> {
  const ms = o.timeoutMs ?? defaultTimeout;
  return isDesktop() ? viaDesktop<T>(service, method, args, ms) : viaHTTP<T>(route, ms);
}

const enc = encodeURIComponent;

type Filter = Pick<ListFilter, 'archived' | 'source' | 'profile'>;

function filterQuery(f: Partial<ListFilter>): Record<string, string | number | boolean | undefined> {
  return { archived: f.archived ? true : undefined, source: f.source, profile: f.profile, limit: f.limit || undefined, cursor: f.cursor };
}

function fullFilter(f: Partial<ListFilter>): ListFilter {
  return { archived: !!f.archived, source: f.source ?? '', profile: f.profile ?? '', limit: f.limit ?? 0, cursor: f.cursor ?? '' };
}

const turnTimeout = 11 * 60_000; // the server gives a turn 10 minutes
const writeTimeout = 60_000;

export const api = {
  sessions: {
    list: (f: Partial<ListFilter>) =>
      call<PageDTO>('Sessions', 'List', [fullFilter(f)], { method: 'GET', path: '/api/sessions', query: filterQuery(f) }),
    count: (f: Filter) =>
      call<CountDTO>('Sessions', 'Count', [fullFilter(f)], { method: 'GET', path: '/api/sessions/count', query: filterQuery(f) }),
    ids: (f: Filter) =>
      call<string[] | null>('Sessions', 'IDs', [fullFilter(f)], { method: 'GET', path: '/api/sessions/ids', query: filterQuery(f) }),
    facets: () => call<FacetsDTO>('Sessions', 'Facets', [], { method: 'GET', path: '/api/sessions/facets' }),
    search: (q: string, limit: number, archived: boolean) =>
      call<HitDTO[] | null>('Sessions', 'Search', [q, limit, archived], {
        method: 'GET',
        path: '/api/sessions/search',
        query: { q, limit, archived: archived ? true : undefined },
      }),
    get: (id: string) => call<SessionDTO>('Sessions', 'Get', [id], { method: 'GET', path: `/api/sessions/${enc(id)}` }),
    transcript: (id: string) =>
      call<MessageDTO[] | null>('Sessions', 'Transcript', [id], { method: 'GET', path: `/api/sessions/${enc(id)}/transcript` }),
    lineage: (id: string) =>
      call<SessionDTO[] | null>('Sessions', 'Lineage', [id], { method: 'GET', path: `/api/sessions/${enc(id)}/lineage` }),
    compactions: (id: string) =>
      call<CompactionDTO[] | null>('Sessions', 'Compactions', [id], { method: 'GET', path: `/api/sessions/${enc(id)}/compactions` }),
    preview: (ids: string[]) =>
      call<PreviewDTO>('Sessions', 'Preview', [ids], { method: 'POST', path: '/api/sessions/preview', body: { ids } }),
    bulk: (op: BulkOp, requestID: string, ids: string[]) => {
      const method = op === 'delete' ? 'Delete' : op === 'archive' ? 'Archive' : 'Unarchive';
      return call<ReceiptDTO>('Sessions', method, [requestID, ids], {
        method: 'POST',
        path: `/api/sessions/${op}`,
        body: { request_id: requestID, ids },
      }, { timeoutMs: writeTimeout });
    },
    send: (id: string, text: string) =>
      call<TurnDTO>('Sessions', 'Send', [id, text], { method: 'POST', path: `/api/sessions/${enc(id)}/send`, body: { text } }, {
        timeoutMs: turnTimeout,
      }),
  },
  plugins: {
    list: () => call<PluginDTO[] | null>('Plugins', 'List', [], { method: 'GET', path: '/api/plugins' }),
    enable: (name: string) => call<PluginDTO>('Plugins', 'Enable', [name], { method: 'POST', path: `/api/plugins/${enc(name)}/enable` }),
    disable: (name: string) => call<PluginDTO>('Plugins', 'Disable', [name], { method: 'POST', path: `/api/plugins/${enc(name)}/disable` }),
    install: (req: InstallRequest) =>
      call<PluginDTO>('Plugins', 'Install', [req], { method: 'POST', path: '/api/plugins/install', body: req }, { timeoutMs: 3 * 60_000 }),
    remove: (name: string) => call<unknown>('Plugins', 'Remove', [name], { method: 'DELETE', path: `/api/plugins/${enc(name)}` }),
    reload: () => call<PluginDTO[] | null>('Plugins', 'Reload', [], { method: 'POST', path: '/api/plugins/reload' }),
    open: (name: string) => call<FolderDTO>('Plugins', 'Open', [name], { method: 'POST', path: `/api/plugins/${enc(name)}/open` }),
    /** browse exists only in the window (a native dialog); "" if cancelled. */
    browse: (zip: boolean) => viaDesktop<string>('Plugins', 'Browse', [zip], 30 * 60_000),
  },
  activity: {
    recent: (afterSeq: number, limit: number) =>
      call<EventDTO[] | null>('Activity', 'Recent', [afterSeq, limit], { method: 'GET', path: '/api/events', query: { after: afterSeq || undefined, limit } }),
  },
  settings: {
    get: () => call<SettingsDTO>('Settings', 'Get', [], { method: 'GET', path: '/api/settings' }),
    set: (s: SettingsDTO) => call<SettingsDTO>('Settings', 'Set', [s], { method: 'PUT', path: '/api/settings', body: s }),
    info: () => call<InfoDTO>('Settings', 'Info', [], { method: 'GET', path: '/api/info' }),
    /** ready tells the backend the first page is painted (the window then starts plugin processes). */
    ready: () => call<unknown>('Settings', 'Ready', [], { method: 'POST', path: '/api/ready' }),
  },
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Backoff between the attempts of an idempotent call. */
export const retryDelays = [500, 1000, 2000];

/** withRetry runs fn, and again after each delay while it fails retryably.
 * fn must be idempotent (a bulk request with one request id). */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, onRetry?: (e: ApiError, attempt: number) => void): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (raw) {
      const e = toApiError(raw);
      const delay = retryDelays[attempt];
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

// ---- live events ----

type Listener<K extends keyof LiveEvents> = (data: LiveEvents[K]) => void;
const listeners = new Map<string, Set<(data: unknown) => void>>();
const reconnectListeners = new Set<() => void>();
let source: EventSource | null = null;
let started = false;

function dispatch(name: string, data: unknown): void {
  for (const fn of listeners.get(name) ?? []) {
    try {
      fn(data);
    } catch (e) {
      console.error(`live event ${name}:`, e);
    }
  }
}

const liveNames: (keyof LiveEvents)[] = ['activity', 'progress', 'plugin-state', 'open-session'];

/** startLive connects the live events once. */
export function startLive(): void {
  if (started) return;
  started = true;
  if (isDesktop()) {
    const on = window.runtime?.EventsOn;
    if (!on) return;
    for (const name of liveNames) on(name, (data: unknown) => dispatch(name, data));
    return;
  }
  if (typeof EventSource === 'undefined') return;
  let broken = false;
  source = new EventSource('/api/stream', { withCredentials: true });
  for (const name of liveNames) {
    source.addEventListener(name, (ev: MessageEvent<string>) => {
      let data: unknown;
      try {
        data = JSON.parse(ev.data);
      } catch {
        return;
      }
      dispatch(name, data);
    });
  }
  source.addEventListener('error', () => {
    broken = true;
  });
  source.addEventListener('open', () => {
    if (!broken) return;
    broken = false;
    for (const fn of reconnectListeners) fn(); // events may have been missed
  });
}

/** on subscribes to a live event; it returns the unsubscribe function. */
export function on<K extends keyof LiveEvents>(name: K, fn: Listener<K>): () => void {
  let set = listeners.get(name);
  if (!set) {
    set = new Set();
    listeners.set(name, set);
  }
  const f = fn as (data: unknown) => void;
  set.add(f);
  return () => set?.delete(f);
}

/** onReconnect is told when the dashboard's stream came back after a break. */
export function onReconnect(fn: () => void): () => void {
  reconnectListeners.add(fn);
  return () => reconnectListeners.delete(fn);
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

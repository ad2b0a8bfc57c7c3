// The API of the UI: every call the views and stores make, each one a bound
// method in the window and its route on the dashboard (see transport.ts).

import type { InstallRequest, ListFilter, SettingsDTO } from './gen/dto';
import { call, desktopOnly } from './transport';

export * from './transport';
export { on, onReconnect, startLive } from './live';

export type BulkOp = 'delete' | 'archive' | 'unarchive';

/** The list's filter; empty fields do not filter. */
export type Filter = Pick<ListFilter, 'archived' | 'source' | 'profile'>;

function filterQuery(f: Partial<ListFilter>) {
  return { archived: f.archived || undefined, source: f.source, profile: f.profile, limit: f.limit || undefined, cursor: f.cursor };
}

function fullFilter(f: Partial<ListFilter>): ListFilter {
  return { archived: !!f.archived, source: f.source ?? '', profile: f.profile ?? '', limit: f.limit ?? 0, cursor: f.cursor ?? '' };
}

const turnTimeout = 11 * 60_000; // the server gives a turn 10 minutes
const writeTimeout = 60_000;

const bulkMethod = { delete: 'Delete', archive: 'Archive', unarchive: 'Unarchive' } as const;
const bulkRoute = {
  delete: 'POST /api/sessions/delete',
  archive: 'POST /api/sessions/archive',
  unarchive: 'POST /api/sessions/unarchive',
} as const;

export const api = {
  sessions: {
    list: (f: Partial<ListFilter>) => call('Sessions', 'List', [fullFilter(f)], { route: 'GET /api/sessions', query: filterQuery(f) }),
    count: (f: Filter) => call('Sessions', 'Count', [fullFilter(f)], { route: 'GET /api/sessions/count', query: filterQuery(f) }),
    ids: (f: Filter) => call('Sessions', 'IDs', [fullFilter(f)], { route: 'GET /api/sessions/ids', query: filterQuery(f) }),
    facets: () => call('Sessions', 'Facets', [], { route: 'GET /api/sessions/facets' }),
    search: (q: string, limit: number, archived: boolean) =>
      call('Sessions', 'Search', [q, limit, archived], { route: 'GET /api/sessions/search', query: { q, limit, archived: archived || undefined } }),
    get: (id: string) => call('Sessions', 'Get', [id], { route: 'GET /api/sessions/{id}', params: { id } }),
    transcript: (id: string) => call('Sessions', 'Transcript', [id], { route: 'GET /api/sessions/{id}/transcript', params: { id } }),
    lineage: (id: string) => call('Sessions', 'Lineage', [id], { route: 'GET /api/sessions/{id}/lineage', params: { id } }),
    compactions: (id: string) => call('Sessions', 'Compactions', [id], { route: 'GET /api/sessions/{id}/compactions', params: { id } }),
    preview: (ids: string[]) => call('Sessions', 'Preview', [ids], { route: 'POST /api/sessions/preview', body: { ids } }),
    bulk: (op: BulkOp, requestID: string, ids: string[]) =>
      call('Sessions', bulkMethod[op], [requestID, ids], { route: bulkRoute[op], body: { request_id: requestID, ids } }, { timeoutMs: writeTimeout }),
    send: (id: string, text: string) =>
      call('Sessions', 'Send', [id, text], { route: 'POST /api/sessions/{id}/send', params: { id }, body: { text } }, { timeoutMs: turnTimeout }),
  },
  plugins: {
    list: () => call('Plugins', 'List', [], { route: 'GET /api/plugins' }),
    enable: (name: string) => call('Plugins', 'Enable', [name], { route: 'POST /api/plugins/{name}/enable', params: { name } }),
    disable: (name: string) => call('Plugins', 'Disable', [name], { route: 'POST /api/plugins/{name}/disable', params: { name } }),
    install: (req: InstallRequest) => call('Plugins', 'Install', [req], { route: 'POST /api/plugins/install', body: req }, { timeoutMs: 3 * 60_000 }),
    remove: (name: string) => call('Plugins', 'Remove', [name], { route: 'DELETE /api/plugins/{name}', params: { name } }),
    reload: () => call('Plugins', 'Reload', [], { route: 'POST /api/plugins/reload' }),
    open: (name: string) => call('Plugins', 'Open', [name], { route: 'POST /api/plugins/{name}/open', params: { name } }),
    /** browse exists only in the window (a native dialog); "" if cancelled. */
    browse: (zip: boolean) => desktopOnly('Plugins', 'Browse', [zip], 30 * 60_000),
  },
  activity: {
    recent: (afterSeq: number, limit: number) =>
      call('Activity', 'Recent', [afterSeq, limit], { route: 'GET /api/events', query: { after: afterSeq || undefined, limit } }),
  },
  settings: {
    get: () => call('Settings', 'Get', [], { route: 'GET /api/settings' }),
    set: (s: SettingsDTO) => call('Settings', 'Set', [s], { route: 'PUT /api/settings', body: s }),
    info: () => call('Settings', 'Info', [], { route: 'GET /api/info' }),
    /** ready tells the backend the first page is painted (the window then starts plugin processes). */
    ready: () => call('Settings', 'Ready', [], { route: 'POST /api/ready' }),
  },
};

export type Api = typeof api;

// The API of the UI: every call the views and stores make, each one a bound
// method in the window and its route on the dashboard (see transport.ts).

import type { AnswerClarifyRequest, CronAddRequest, FilterDTO, ImportRequest, InstallRequest, KeyRequest, MemoryRequest, PluginEnvRequest, ShellHookRequest, ListFilter, SettingsDTO, SkillKeyRequest, SkillRequest } from './gen/dto';
import { call, desktopOnly } from './transport';

export * from './transport';
export { on, onReconnect, startLive } from './live';

export type BulkOp = 'delete' | 'archive' | 'unarchive' | 'restore' | 'purge';

/** Where sessions live: the list's tabs. */
export type Scope = 'active' | 'archived' | 'trash';

/** The list's filter; empty fields do not filter. */
export interface Filter {
  scope: Scope;
  source?: string;
  profile?: string;
  /** a chat platform (telegram, slack, ...); "" for every surface */
  platform?: string;
}

export type Page = Filter & { limit?: number; cursor?: string };

/** The conversations list's filter: delegate children as rows of their own when subagents. */
export type ConvPage = Page & { subagents?: boolean };

function filterQuery(f: Page) {
  return {
    scope: f.scope,
    source: f.source || undefined,
    profile: f.profile || undefined,
    platform: f.platform || undefined,
    limit: f.limit || undefined,
    cursor: f.cursor || undefined,
  };
}

function listFilter(f: Page): ListFilter {
  return { scope: f.scope, source: f.source ?? '', profile: f.profile ?? '', platform: f.platform ?? '', limit: f.limit ?? 0, cursor: f.cursor ?? '' };
}

const turnTimeout = 11 * 60_000; // the server gives a turn 10 minutes
const writeTimeout = 60_000;

const bulkMethod = { delete: 'Delete', archive: 'Archive', unarchive: 'Unarchive', restore: 'Restore', purge: 'Purge' } as const;
const bulkRoute = {
  delete: 'POST /api/sessions/delete',
  archive: 'POST /api/sessions/archive',
  unarchive: 'POST /api/sessions/unarchive',
  restore: 'POST /api/sessions/restore',
  purge: 'POST /api/sessions/purge',
} as const;

export const api = {
  sessions: {
    list: (f: Page) => call('Sessions', 'List', [listFilter(f)], { route: 'GET /api/sessions', query: filterQuery(f) }),
    count: (f: Filter) => call('Sessions', 'Count', [listFilter(f)], { route: 'GET /api/sessions/count', query: filterQuery(f) }),
    ids: (f: Filter) => call('Sessions', 'IDs', [listFilter(f)], { route: 'GET /api/sessions/ids', query: filterQuery(f) }),
    facets: () => call('Sessions', 'Facets', [], { route: 'GET /api/sessions/facets' }),
    /** search looks in a scope: 'all' is active and archived; each hit says where it lives */
    search: (q: string, limit: number, scope: Scope | 'all') =>
      call('Sessions', 'Find', [{ q, limit, scope }], { route: 'GET /api/sessions/search', query: { q, limit, scope } }),
    get: (id: string) => call('Sessions', 'Get', [id], { route: 'GET /api/sessions/{id}', params: { id } }),
    transcript: (id: string) => call('Sessions', 'Transcript', [id], { route: 'GET /api/sessions/{id}/transcript', params: { id } }),
    lineage: (id: string) => call('Sessions', 'Lineage', [id], { route: 'GET /api/sessions/{id}/lineage', params: { id } }),
    compactions: (id: string) => call('Sessions', 'Compactions', [id], { route: 'GET /api/sessions/{id}/compactions', params: { id } }),
    /** preview says what op would do to ids: the count, the cascade */
    preview: (ids: string[], op: BulkOp = 'delete') =>
      call('Sessions', 'PreviewBulk', [{ op, ids }], { route: 'POST /api/sessions/preview', body: { op, ids } }),
    /** previewRule says what op would do to the sessions a rule matches now */
    previewRule: (op: BulkOp, filter: FilterDTO) =>
      call('Sessions', 'PreviewBulk', [{ op, filter }], { route: 'POST /api/sessions/preview', body: { op, filter } }),
    /** bulkRule runs op on what a rule matches, in one transaction: one receipt, one event */
    bulkRule: (op: BulkOp, requestID: string, filter: FilterDTO) =>
      call('Sessions', 'Bulk', [op, { request_id: requestID, filter }], { route: bulkRoute[op], body: { request_id: requestID, filter } }, { timeoutMs: writeTimeout }),
    bulk: (op: BulkOp, requestID: string, ids: string[]) =>
      call('Sessions', bulkMethod[op], [requestID, ids], { route: bulkRoute[op], body: { request_id: requestID, ids } }, { timeoutMs: writeTimeout }),
    create: (title: string) => call('Sessions', 'Create', [{ title }], { route: 'POST /api/sessions', body: { title } }),
    rename: (id: string, title: string) => call('Sessions', 'Rename', [id, title], { route: 'POST /api/sessions/{id}/rename', params: { id }, body: { title } }),
    setPinned: (id: string, pinned: boolean) => call('Sessions', 'SetPinned', [id, pinned], { route: 'POST /api/sessions/{id}/pin', params: { id }, body: { pinned } }),
    export: (id: string, format: 'markdown' | 'json') =>
      call('Sessions', 'Export', [id, format], { route: 'GET /api/sessions/{id}/export', params: { id }, query: { format } }),
    /** saveExport exists only in the window: a native save dialog, then the
     * file written; path "" if the user cancelled. */
    saveExport: (id: string, format: 'markdown' | 'json') => desktopOnly('Sessions', 'SaveExport', [id, format], 30 * 60_000),
    /** commands are the slash commands a composer may offer, with their argument hints */
    commands: () => call('Sessions', 'Commands', [], { route: 'GET /api/commands' }),
    send: (id: string, text: string) =>
      call('Sessions', 'Send', [id, text], { route: 'POST /api/sessions/{id}/send', params: { id }, body: { text } }, { timeoutMs: turnTimeout }),
    /** stop stops the turn running in a session (its send then answers stopped: true) */
    stop: (id: string) => call('Sessions', 'StopTurn', [id], { route: 'POST /api/sessions/{id}/stop', params: { id } }),
    /** pendingApprovals are the tool calls a plugin wants approved, waiting for an answer */
    pendingApprovals: () => call('Sessions', 'PendingApprovals', [], { route: 'GET /api/approvals' }),
    /** answerApproval approves or denies; scope "session" also lets later asks of the same rule in this conversation run, "always" in every conversation from now on */
    answerApproval: (id: string, approve: boolean, scope: 'once' | 'session' | 'always' = 'once') =>
      call('Sessions', 'AnswerApproval', [id, approve, scope], { route: 'POST /api/approvals/{id}', params: { id }, body: { approve, scope } }),
    /** pendingClarify are the questions the model asked (the clarify tool), waiting for the person's answer */
    pendingClarify: () => call('Sessions', 'PendingClarify', [], { route: 'GET /api/clarify' }),
    /** answerClarify answers one: response is a choice as shown or the person's own words; a multi-select question's
     * picks go in choices (their own words, if any, in response); both empty skips it */
    answerClarify: (id: string, answer: AnswerClarifyRequest) =>
      call('Sessions', 'AnswerClarify', [id, answer], { route: 'POST /api/clarify/{id}', params: { id }, body: answer }),
  },
  conversations: {
    /** list is one page of conversations: a chain is one row (its newest part), subagents nested */
    list: (f: ConvPage) =>
      call('Sessions', 'Conversations', [{ filter: listFilter(f), subagents: !!f.subagents }], {
        route: 'GET /api/conversations',
        query: { ...filterQuery(f), subagents: f.subagents || undefined },
      }),
    count: (f: ConvPage) =>
      call('Sessions', 'ConversationCount', [{ filter: listFilter(f), subagents: !!f.subagents }], {
        route: 'GET /api/conversations/count',
        query: { ...filterQuery(f), subagents: f.subagents || undefined },
      }),
    ids: (f: ConvPage) =>
      call('Sessions', 'ConversationIDs', [{ filter: listFilter(f), subagents: !!f.subagents }], {
        route: 'GET /api/conversations/ids',
        query: { ...filterQuery(f), subagents: f.subagents || undefined },
      }),
    /** subagents are a conversation's delegate children, on demand */
    subagents: (id: string) => call('Sessions', 'Subagents', [id], { route: 'GET /api/sessions/{id}/subagents', params: { id } }),
    /** get is a conversation as one scroll: every part's messages, a divider at each rotation */
    get: (id: string, highlight = '') =>
      call('Sessions', 'Conversation', [id, highlight], { route: 'GET /api/sessions/{id}/conversation', params: { id }, query: { highlight: highlight || undefined } }),
  },
  requests: {
    /** recent are the remembered requests, newest first, each saying whether it can be undone */
    recent: (limit: number) => call('Sessions', 'Requests', [limit], { route: 'GET /api/requests', query: { limit } }),
    /** undo reverses a request as a whole; a retried undo replays */
    undo: (requestID: string) =>
      call('Sessions', 'Undo', [requestID], { route: 'POST /api/requests/{request_id}/undo', params: { request_id: requestID } }, { timeoutMs: writeTimeout }),
  },
  trash: {
    summary: () => call('Sessions', 'Trash', [], { route: 'GET /api/trash' }),
    /** empty purges the trash, or what has been there longer than olderThan ("7d") */
    empty: (requestID: string, olderThan = '') =>
      call('Sessions', 'EmptyTrash', [{ request_id: requestID, older_than: olderThan }], {
        route: 'POST /api/trash/empty',
        body: { request_id: requestID, older_than: olderThan },
      }, { timeoutMs: writeTimeout }),
  },
  plugins: {
    list: () => call('Plugins', 'List', [], { route: 'GET /api/plugins' }),
    enable: (name: string) => call('Plugins', 'Enable', [name], { route: 'POST /api/plugins/{name}/enable', params: { name } }),
    disable: (name: string) => call('Plugins', 'Disable', [name], { route: 'POST /api/plugins/{name}/disable', params: { name } }),
    install: (req: InstallRequest) => call('Plugins', 'Install', [req], { route: 'POST /api/plugins/install', body: req }, { timeoutMs: 3 * 60_000 }),
    remove: (name: string) => call('Plugins', 'Remove', [name], { route: 'DELETE /api/plugins/{name}', params: { name } }),
    reload: () => call('Plugins', 'Reload', [], { route: 'POST /api/plugins/reload' }),
    /** shellHooks: config.yaml's shell hooks, whether each is approved and where it is registered */
    shellHooks: () => call('Plugins', 'ShellHooks', [], { route: 'GET /api/hooks/shell' }),
    /** approveShellHook: the window only; the dashboard is refused */
    approveShellHook: (req: ShellHookRequest) => call('Plugins', 'ApproveShellHook', [req], { route: 'POST /api/hooks/shell/approve', body: req }),
    revokeShellHook: (req: ShellHookRequest) => call('Plugins', 'RevokeShellHook', [req], { route: 'POST /api/hooks/shell/revoke', body: req }),
    open: (name: string) => call('Plugins', 'Open', [name], { route: 'POST /api/plugins/{name}/open', params: { name } }),
    /** setEnv keeps a value for a variable the plugin declares in the profile's .env ('' removes it); it never comes back */
    setEnv: (name: string, req: PluginEnvRequest) =>
      call('Plugins', 'SetEnv', [name, req], { route: 'POST /api/plugins/{name}/env', params: { name }, body: req }),
    /** browse exists only in the window (a native dialog); "" if cancelled. */
    browse: (zip: boolean) => desktopOnly('Plugins', 'Browse', [zip], 30 * 60_000),
  },
  activity: {
    recent: (afterSeq: number, limit: number) =>
      call('Activity', 'Recent', [afterSeq, limit], { route: 'GET /api/events', query: { after: afterSeq || undefined, limit } }),
  },
  storage: {
    report: () => call('Storage', 'Report', [], { route: 'GET /api/storage' }),
    vacuum: () => call('Storage', 'Vacuum', [], { route: 'POST /api/storage/vacuum' }, { timeoutMs: 10 * 60_000 }),
    confirmRetention: () => call('Storage', 'ConfirmRetention', [], { route: 'POST /api/storage/retention/confirm' }),
    /** importSources: the agents whose sessions can be imported, where, and whether anything is there */
    importSources: () => call('Storage', 'ImportSources', [], { route: 'GET /api/storage/import' }),
    /** import reads one agent's sessions from its default place (dry_run: say what would happen) */
    import: (req: ImportRequest) => call('Storage', 'Import', [req], { route: 'POST /api/storage/import', body: req }, { timeoutMs: 10 * 60_000 }),
  },
  gateway: {
    /** status is the Gateway page: adapters, their state and last error, who may talk, who was refused */
    status: () => call('Gateway', 'Status', [], { route: 'GET /api/gateway' }),
    /** retry sends again the replies that were given up (platform "" for all) */
    retry: (platform: string) => call('Gateway', 'Retry', [{ platform }], { route: 'POST /api/gateway/retry', body: { platform } }),
    /** approvePairing lets in the person of a pairing request (by its id); the page as it is then */
    approvePairing: (platform: string, id: string) =>
      call('Gateway', 'ApprovePairing', [{ platform, id, user_id: '' }], { route: 'POST /api/gateway/pairing/approve', body: { platform, id, user_id: '' } }),
    /** revokePairing lets out a person pairing let in; the page as it is then */
    revokePairing: (platform: string, userID: string) =>
      call('Gateway', 'RevokePairing', [{ platform, id: '', user_id: userID }], { route: 'POST /api/gateway/pairing/revoke', body: { platform, id: '', user_id: userID } }),
  },
  cron: {
    list: () => call('Cron', 'List', [], { route: 'GET /api/cron' }),
    add: (req: CronAddRequest) => call('Cron', 'Add', [req], { route: 'POST /api/cron', body: req }),
    pause: (name: string) => call('Cron', 'Pause', [name], { route: 'POST /api/cron/{name}/pause', params: { name } }),
    resume: (name: string) => call('Cron', 'Resume', [name], { route: 'POST /api/cron/{name}/resume', params: { name } }),
    remove: (name: string) => call('Cron', 'Remove', [name], { route: 'POST /api/cron/{name}/remove', params: { name } }),
    /** run runs a job now and answers with its reply and session */
    run: (name: string) => call('Cron', 'Run', [name], { route: 'POST /api/cron/{name}/run', params: { name } }, { timeoutMs: turnTimeout }),
  },
  settings: {
    get: () => call('Settings', 'Get', [], { route: 'GET /api/settings' }),
    set: (s: SettingsDTO) => call('Settings', 'Set', [s], { route: 'PUT /api/settings', body: s }),
    info: () => call('Settings', 'Info', [], { route: 'GET /api/info' }),
    /** checkModel asks the saved model for a word (a real request, up to 30 s) */
    checkModel: () => call('Settings', 'CheckModel', [], { route: 'POST /api/settings/model/check' }, { timeoutMs: 45_000 }),
    /** setKey keeps a key's variable in the profile's .env ('' removes it); the key never comes back */
    setKey: (req: KeyRequest) => call('Settings', 'SetKey', [req], { route: 'POST /api/settings/key', body: req }),
    /** standingApprovals: the rules answered "always" (config.yaml's command_allowlist) */
    standingApprovals: () => call('Settings', 'StandingApprovals', [], { route: 'GET /api/approvals/standing' }),
    /** revokeStandingApproval: the rule is asked again from its next call, in every process of the profile */
    revokeStandingApproval: (rule: string) =>
      call('Settings', 'RevokeStandingApproval', [rule], { route: 'POST /api/approvals/standing/revoke', body: { rule } }),
    /** memory: what the agent remembers (MEMORY.md, USER.md in the profile's memories/ folder) */
    memory: () => call('Settings', 'Memory', [], { route: 'GET /api/memory' }),
    /** remember adds an entry (held to the file's budget and the tool's checks) */
    remember: (req: MemoryRequest) => call('Settings', 'Remember', [req], { route: 'POST /api/memory/remember', body: req }),
    /** forget removes exactly that entry */
    forget: (req: MemoryRequest) => call('Settings', 'Forget', [req], { route: 'POST /api/memory/forget', body: req }),
    /** skills: the profile's skills (skills/ and skills.external_dirs), and which are not offered */
    skills: () => call('Settings', 'Skills', [], { route: 'GET /api/skills' }),
    /** skill: a skill's SKILL.md, or one of its files, as the model loads it */
    skill: (req: SkillRequest) => call('Settings', 'Skill', [req], { route: 'POST /api/skills/view', body: req }),
    /** offerSkill takes a skill off skills.disabled (offered) or puts it on */
    offerSkill: (req: SkillRequest) => call('Settings', 'OfferSkill', [req], { route: 'POST /api/skills/offer', body: req }),
    /** setSkillKey keeps a value for a variable a skill declares in the profile's .env ("" removes it) */
    setSkillKey: (req: SkillKeyRequest) => call('Settings', 'SetSkillKey', [req], { route: 'POST /api/skills/env', body: req }),
    /** ready tells the backend the first page is painted (the window then starts plugin processes). */
    ready: () => call('Settings', 'Ready', [], { route: 'POST /api/ready' }),
  },
};

export type Api = typeof api;

// Gateway: the chat platforms the agent answers on. Each adapter's state
// (connected, retrying, error, not running), its last error, messages in
// and out, replies waiting or given up, who may talk (deny by default) and
// the senders that were refused; who runs the gateway now.

import { api, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, num, plural, relative } from '../format';
import { showMessage } from '../ops';
import type { View } from '../state';
import type { AdapterDTO, GatewayDTO } from '../types';

const stateClass: Record<string, string> = { connected: 'ok', retrying: 'pending', starting: 'pending', error: 'danger' };

export class GatewayView implements View {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;
  private readonly status: HTMLElement;
  private timer = 0;

  constructor() {
    this.status = h('div', { class: 'list-status', role: 'status' });
    this.body = h('div', { class: 'storage', 'data-testid': 'gateway' });
    this.el = h(
      'section',
      { class: 'view storage-view', 'aria-label': 'Gateway' },
      h('div', { class: 'page-head' }, h('h1', {}, 'Gateway'), h('span', { class: 'spacer' }), button('Refresh', { class: 'btn small' }, () => void this.load())),
      this.status,
      this.body,
    );
  }

  show(): void {
    void this.load();
    window.clearInterval(this.timer);
    // states change on their own (a platform goes down, comes back)
    this.timer = window.setInterval(() => {
      if (!this.el.hidden) void this.load(true);
      else window.clearInterval(this.timer);
    }, 5000);
  }

  private async load(quiet = false): Promise<void> {
    if (!quiet) replace(this.status, 'Loading…');
    try {
      const g = await api.gateway.status();
      clear(this.status);
      this.render(g);
    } catch (e) {
      replace(this.status, `Could not read the gateway: ${toApiError(e).message}`, button('Retry', { class: 'btn small' }, () => void this.load()));
    }
  }

  private render(g: GatewayDTO): void {
    const adapters = g.adapters ?? [];
    const running = g.running && g.host
      ? h('p', { 'data-testid': 'gateway-host' }, h('span', { class: 'badge ok' }, 'running'), ` in ${g.host.process || 'another process'} (pid ${g.host.pid}) since ${relative(g.host.since)}`)
      : h(
          'p',
          { 'data-testid': 'gateway-host' },
          h('span', { class: 'badge' }, 'not running'),
          adapters.length > 0
            ? g.autostart
              ? ' The window and atrium serve start it while open (gateway.autostart); another process may hold it.'
              : ' Start it with atrium gateway run, or set gateway.autostart: true so the window and atrium serve run it.'
            : '',
        );
    if (adapters.length === 0) {
      this.body.replaceChildren(
        card(
          'No platform configured',
          running,
          h('p', {}, 'Add an adapter to config.yaml (tokens stay in environment variables):'),
          h('pre', { class: 'selectable code' }, 'gateway:\n  telegram:\n    token_env: TELEGRAM_BOT_TOKEN\n    allowed_users: [123456789]'),
          h('p', { class: 'muted small' }, 'Or, as the familiar agent takes them, keep TELEGRAM_BOT_TOKEN and TELEGRAM_ALLOWED_USERS (Slack: SLACK_BOT_TOKEN, SLACK_APP_TOKEN, SLACK_ALLOWED_USERS; Discord: DISCORD_BOT_TOKEN, DISCORD_ALLOWED_USERS) in the profile’s .env.'),
          h('p', { class: 'muted small' }, 'Nobody may talk to the agent until listed in allowed_users or allowed_chats, or let in by pairing: a stranger who writes to the bot in a DM is given a code you approve here or with atrium pairing approve.'),
        ),
      );
      return;
    }
    const table = h(
      'table',
      { class: 'plugins gateway-table', 'data-testid': 'adapters' },
      h('thead', {}, h('tr', {}, ...['Platform', 'State', 'Messages', 'Replies', 'Allowed', 'Last error'].map((x) => h('th', {}, x)))),
    );
    const tbody = h('tbody', {});
    for (const a of adapters) tbody.append(adapterRow(a));
    table.append(tbody);
    const refusals = g.refusals ?? [];
    const refused = card(
      'Refused senders',
      refusals.length === 0
        ? h('p', { class: 'muted' }, 'Nobody was refused.')
        : h(
            'table',
            { class: 'plugins', 'data-testid': 'refusals' },
            h('thead', {}, h('tr', {}, ...['Platform', 'User id', 'Name', 'Chat', 'Times', 'Last'].map((x) => h('th', {}, x)))),
            h(
              'tbody',
              {},
              ...refusals.map((r) =>
                h('tr', {}, h('td', {}, r.platform), h('td', {}, h('code', { class: 'selectable' }, r.user_id)), h('td', {}, r.user_name || '–'), h('td', {}, r.chat_id || '–'), h('td', {}, num(r.count)), h('td', { title: absolute(r.last_at) }, relative(r.last_at))),
              ),
            ),
          ),
      h('p', { class: 'muted small' }, 'Each was told once that the assistant is private. To let one in, add their id to gateway.<platform>.allowed_users (or, for a platform the .env runs, its <PLATFORM>_ALLOWED_USERS).'),
    );
    // What a person should know of the platforms the familiar agent's .env enables.
    const notes = (g.notes ?? []).map((n) => h('p', { class: 'small warn-text selectable', 'data-testid': 'gateway-note' }, n));
    this.body.replaceChildren(card('Adapters', running, h('div', { class: 'table-wrap' }, table), ...notes), this.pairing(g), refused, eventHooks(g));
  }

  /** Pairing: the people waiting for their code to be approved (the codes are never shown), and those it let in. */
  private pairing(g: GatewayDTO): HTMLElement {
    const waiting = g.pairing ?? [];
    const paired = g.paired ?? [];
    const act = async (what: () => Promise<GatewayDTO>, done: string) => {
      try {
        this.render(await what());
        showMessage('ok', done);
      } catch (e) {
        showMessage('error', 'Pairing', toApiError(e).message);
      }
    };
    return card(
      'Pairing',
      waiting.length === 0
        ? h('p', { class: 'muted', 'data-testid': 'pairing-none' }, 'Nobody is waiting. A person not let in who writes to the bot in a DM is given a one-time code (it lasts an hour); they wait here until you approve them.')
        : peopleTable('pairing-requests', 'Asked', waiting.map((r) => ({
            attrs: { 'data-request': r.id }, platform: r.platform, userID: r.user_id, name: r.user_name, at: r.created_at,
            action: button('Approve', { class: 'btn small primary', 'data-testid': `approve-${r.id}` }, () =>
              void act(() => api.gateway.approvePairing(r.platform, r.id), `${r.user_name || r.user_id} may now talk to the agent on ${r.platform}.`)),
          }))),
      paired.length === 0
        ? ''
        : peopleTable('paired', 'Let in', paired.map((p) => ({
            attrs: { 'data-paired': `${p.platform}:${p.user_id}` }, platform: p.platform, userID: p.user_id, name: p.user_name, at: p.approved_at,
            action: button('Revoke', { class: 'btn small', 'data-testid': `revoke-${p.platform}-${p.user_id}` }, () =>
              void act(() => api.gateway.revokePairing(p.platform, p.user_id), `${p.user_name || p.user_id} is let out on ${p.platform}.`)),
          }))),
      h('p', { class: 'muted small' }, 'From a terminal: atrium pairing list, atrium pairing approve PLATFORM CODE, atrium pairing revoke PLATFORM USER_ID.'),
    );
  }
}

/** A person on a platform, as a row of a table of people. */
interface Person {
  attrs: Record<string, string>;
  platform: string;
  userID: string;
  name: string;
  at: string;
  action: HTMLElement;
}

/** peopleTable lists people: platform, user id, name, when (headed when), and a button. */
function peopleTable(testid: string, when: string, people: Person[]): HTMLElement {
  return h(
    'table',
    { class: 'plugins', 'data-testid': testid },
    h('thead', {}, h('tr', {}, ...['Platform', 'User id', 'Name', when, ''].map((x) => h('th', {}, x)))),
    h(
      'tbody',
      {},
      ...people.map((p) =>
        h(
          'tr',
          p.attrs,
          h('td', {}, p.platform),
          h('td', {}, h('code', { class: 'selectable' }, p.userID)),
          h('td', {}, p.name || '–'),
          h('td', { title: absolute(p.at) }, relative(p.at)),
          h('td', {}, p.action),
        ),
      ),
    ),
  );
}

/** The gateway event hooks of <home>/hooks/ (the familiar agent's HOOK.yaml + handler.py). */
function eventHooks(g: GatewayDTO): HTMLElement {
  const hooks = g.hooks ?? [];
  const problems = g.hook_problems ?? [];
  return card(
    'Event hooks',
    hooks.length === 0
      ? h('p', { class: 'muted' }, 'None. A folder in hooks/ beside config.yaml with a HOOK.yaml and a handler.py runs while the gateway runs.')
      : h(
          'table',
          { class: 'plugins', 'data-testid': 'event-hooks' },
          h('thead', {}, h('tr', {}, ...['Hook', 'Listens to', 'Folder'].map((x) => h('th', {}, x)))),
          h(
            'tbody',
            {},
            ...hooks.map((x) =>
              h(
                'tr',
                { 'data-hook': x.folder },
                h('td', {}, h('strong', {}, x.name), x.description ? h('div', { class: 'muted small' }, x.description) : ''),
                h('td', {}, ...(x.events ?? []).map((e) => h('code', { class: 'chip' }, e))),
                h('td', {}, h('code', { class: 'selectable' }, `hooks/${x.folder}`)),
              ),
            ),
          ),
        ),
    ...problems.map((p) => h('p', { class: 'small danger-text selectable', 'data-testid': 'event-hook-problem' }, p)),
    h('p', { class: 'muted small' }, 'Loaded when the gateway starts; a handler that fails at import is in its log.'),
  );
}

function adapterRow(a: AdapterDTO): HTMLElement {
  const state = h('span', { class: `badge ${stateClass[a.state] ?? ''}`, 'data-testid': `state-${a.platform}` }, a.state);
  const stateCell = h('td', {}, state);
  if (a.detail) stateCell.append(h('div', { class: 'muted small' }, a.detail));
  if ((a.missing_env ?? []).length > 0) stateCell.append(h('div', { class: 'small danger-text' }, `${(a.missing_env ?? []).join(', ')} not set`));
  const replies = h('td', {}, `${num(a.sent)} sent`);
  if (a.pending > 0) replies.append(h('div', { class: 'small' }, h('span', { class: 'badge pending' }, `${num(a.pending)} waiting`)));
  if (a.failed > 0) {
    replies.append(
      h('div', { class: 'small' }, h('span', { class: 'badge danger' }, `${plural(a.failed, 'given up', 'given up')}`), ' ',
        button('Retry', { class: 'btn small', 'data-testid': `retry-${a.platform}` }, () => void retry(a.platform))),
    );
  }
  const users = a.allowed_users ?? [];
  const chats = a.allowed_chats ?? [];
  const roles = a.allowed_roles ?? [];
  const allowed = users.length + chats.length + roles.length === 0
    ? h('td', { class: 'muted' }, 'nobody (deny by default)')
    : h('td', {}, ...users.map((u) => h('code', { class: 'chip selectable' }, u)), ...chats.map((c) => h('code', { class: 'chip selectable', title: 'a chat: everyone in it' }, `chat ${c}`)),
      ...roles.map((r) => h('code', { class: 'chip selectable', title: 'a role: every member of the server who has it' }, `role ${r}`)));
  const err = a.last_error
    ? h('td', { class: 'small' }, h('div', { class: 'danger-text selectable' }, a.last_error), a.last_error_at ? h('div', { class: 'muted', title: absolute(a.last_error_at) }, relative(a.last_error_at)) : '')
    : h('td', { class: 'muted' }, '–');
  return h(
    'tr',
    { 'data-testid': `adapter-${a.platform}` },
    h(
      'td',
      {},
      h('strong', {}, a.platform),
      a.configured ? '' : h('div', { class: 'muted small' }, 'no longer configured'),
      a.home_channel
        ? h('div', { class: 'muted small', 'data-testid': `home-${a.platform}`, title: `set ${a.home_from === 'config' ? 'in config.yaml or the .env' : `with ${a.home_from}`}: scheduled jobs delivering to ${a.platform} post here` }, `home ${a.home_channel}`)
        : '',
    ),
    stateCell,
    h('td', {}, `${num(a.received)} in`),
    replies,
    allowed,
    err,
  );
}

async function retry(platform: string): Promise<void> {
  try {
    const r = await api.gateway.retry(platform);
    showMessage('ok', `${plural(r.requeued, 'reply', 'replies')} queued again`, 'The running gateway sends them now.');
  } catch (e) {
    showMessage('error', 'Could not retry', toApiError(e).message);
  }
}

function card(title: string, ...children: (Node | string)[]): HTMLElement {
  return h('section', { class: 'card' }, h('h2', {}, title), ...children);
}

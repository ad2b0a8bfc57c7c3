// One session: header, lineage, messages with compaction markers and
// cards, and a composer for a message or a slash command.

import { api, missing, setWindowTitle, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, num, plural, relative, shortID, shortTime } from '../format';
import { onLinkClick, renderMarkdown } from '../markdown';
import { app, type View } from '../state';
import type { CompactionDTO, MessageDTO, SessionDTO, TurnDTO } from '../types';

const shownAtFirst = 400;

export class TranscriptView implements View {
  readonly el: HTMLElement;
  private readonly head: HTMLElement;
  private readonly lineage: HTMLElement;
  private readonly body: HTMLElement;
  private readonly reply: HTMLElement;
  private readonly composer: HTMLTextAreaElement;
  private readonly sendBtn: HTMLButtonElement;
  private id = '';
  private gen = 0;
  private sending = false;
  private compactionsSupported = true;
  private readonly drafts = new Map<string, string>();

  constructor() {
    const back = button('← Back', { class: 'btn plain', title: 'Back to the list (Escape)', 'data-testid': 'back' }, () => this.leave());
    this.head = h('div', { class: 'tx-head' });
    this.lineage = h('nav', { class: 'lineage', 'aria-label': 'Lineage' });
    this.body = h('div', { class: 'messages', role: 'log', 'aria-label': 'Transcript', tabindex: '0' });
    this.body.addEventListener('click', onLinkClick);
    this.reply = h('div', { class: 'reply', role: 'status', 'aria-live': 'polite' });
    this.composer = h('textarea', {
      class: 'composer',
      rows: 3,
      placeholder: 'Message or /command (/compress, /help, /whoami) — Enter sends, Shift+Enter for a new line',
      'aria-label': 'Message or slash command',
      'data-testid': 'composer',
    });
    this.composer.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        void this.send();
      }
    });
    this.composer.addEventListener('input', () => this.drafts.set(this.id, this.composer.value));
    this.sendBtn = button('Send', { class: 'btn primary', 'data-testid': 'send' }, () => void this.send());
    const form = h('div', { class: 'composer-row' }, this.composer, this.sendBtn);
    this.el = h(
      'section',
      { class: 'view transcript-view', 'aria-label': 'Transcript' },
      h('div', { class: 'tx-top' }, back, this.head),
      this.lineage,
      this.body,
      this.reply,
      form,
    );
  }

  show(id?: string): void {
    if (id && id !== this.id) {
      this.id = id;
      clear(this.reply);
      this.composer.value = this.drafts.get(id) ?? '';
    }
    void this.load();
    this.body.focus({ preventScroll: true });
  }

  escape(): boolean {
    this.leave();
    return true;
  }

  private leave(): void {
    app.go('sessions');
  }

  async load(scrollToEnd = true): Promise<void> {
    const gen = ++this.gen;
    const id = this.id;
    replace(this.head, h('h1', { class: 'tx-title' }, 'Loading…'));
    try {
      const compP = this.compactionsSupported
        ? api.sessions.compactions(id).catch((e: unknown) => {
            if (missing(e)) this.compactionsSupported = false;
            else console.warn('compactions:', e);
            return [] as CompactionDTO[];
          })
        : Promise.resolve([] as CompactionDTO[]);
      const [s, msgs, lin, comps] = await Promise.all([
        api.sessions.get(id),
        api.sessions.transcript(id),
        api.sessions.lineage(id).catch(() => [] as SessionDTO[]),
        compP,
      ]);
      if (gen !== this.gen) return;
      this.renderHead(s);
      this.renderLineage(s, lin ?? []);
      this.renderMessages(msgs ?? [], comps ?? [], false);
      if (scrollToEnd) this.body.scrollTop = this.body.scrollHeight;
    } catch (raw) {
      if (gen !== this.gen) return;
      const e = toApiError(raw);
      replace(this.head, h('h1', { class: 'tx-title' }, e.code === 'not_found' ? 'Session not found' : 'Could not load the session'));
      replace(this.body, h('p', { class: 'error-text' }, e.message));
      clear(this.lineage);
    }
  }

  private renderHead(s: SessionDTO): void {
    const meta = h(
      'div',
      { class: 'tx-meta' },
      h('span', { class: 'badge' }, s.source),
      h('span', { class: 'badge' }, `profile ${s.profile}`),
      s.archived ? h('span', { class: 'badge arch' }, 'archived') : null,
      s.pinned ? h('span', { class: 'badge pin' }, 'pinned') : null,
      s.ended_at ? h('span', { class: 'badge', title: absolute(s.ended_at) }, `ended${s.end_reason ? `: ${s.end_reason}` : ''}`) : h('span', { class: 'badge live' }, 'live'),
      h('span', { class: 'muted' }, `${plural(s.message_count, 'message')} · ${num(s.token_count)} tokens · started `, h('time', { title: absolute(s.started_at) }, relative(s.started_at)), ' · last activity ', h('time', { title: absolute(s.last_activity_at) }, relative(s.last_activity_at))),
    );
    const ids = h('div', { class: 'tx-ids muted small' }, 'id ', h('code', { class: 'selectable' }, s.id));
    if (s.parent_session_id) {
      ids.append(' · parent ', sessionLink(s.parent_session_id, shortID(s.parent_session_id)), s.relation ? ` (${s.relation})` : '');
    }
    replace(this.head, h('h1', { class: `tx-title${s.title ? '' : ' untitled'}` }, s.title || '(untitled)'), meta, ids);
    setWindowTitle(`Atrium · ${app.info.profile} · ${s.title || shortID(s.id)}`);
  }

  private renderLineage(s: SessionDTO, chain: SessionDTO[]): void {
    clear(this.lineage);
    if (chain.length <= 1) return;
    this.lineage.append(h('span', { class: 'muted' }, 'Compression chain: '));
    chain.forEach((c, i) => {
      if (i > 0) this.lineage.append(h('span', { class: 'sep', 'aria-hidden': 'true' }, ' → '));
      const label = `${c.title || '(untitled)'} · ${shortTime(c.started_at)}`;
      if (c.id === s.id) this.lineage.append(h('span', { class: 'chain current', 'aria-current': 'page', title: c.id }, label));
      else this.lineage.append(sessionLink(c.id, label));
    });
  }

  private renderMessages(msgs: MessageDTO[], comps: CompactionDTO[], all: boolean): void {
    clear(this.body);
    if (msgs.length === 0 && comps.length === 0) {
      this.body.append(h('p', { class: 'muted empty' }, 'No messages yet.'));
      return;
    }
    // Compaction cards go among the messages by created_at.
    const cards = [...comps].sort((a, b) => Date.parse(a.created_at) - Date.parse(b.created_at));
    const start = all ? 0 : Math.max(0, msgs.length - shownAtFirst);
    const firstShown = msgs[start];
    let c = 0;
    if (start > 0 && firstShown) {
      this.body.append(
        button(`Show ${num(start)} earlier messages`, { class: 'btn small plain more' }, () => this.renderMessages(msgs, comps, true)),
      );
      const t0 = Date.parse(firstShown.created_at);
      while (c < cards.length && Date.parse(cards[c]!.created_at) < t0) c++;
    }
    const frag = document.createDocumentFragment();
    for (let i = start; i < msgs.length; i++) {
      const m = msgs[i]!;
      const t = Date.parse(m.created_at);
      while (c < cards.length && Date.parse(cards[c]!.created_at) <= t && !(m.marker === 'summary')) frag.append(compactionCard(cards[c++]!));
      frag.append(message(m));
      // a rotation's card sits just before its summary
      if (m.marker === 'summary') while (c < cards.length && Date.parse(cards[c]!.created_at) <= t) frag.append(compactionCard(cards[c++]!));
    }
    while (c < cards.length) frag.append(compactionCard(cards[c++]!));
    this.body.append(frag);
  }

  private async send(): Promise<void> {
    const text = this.composer.value.trim();
    if (!text || this.sending) return;
    this.sending = true;
    this.sendBtn.disabled = true;
    this.composer.readOnly = true;
    const id = this.id;
    replace(this.reply, h('div', { class: 'reply-pending' }, text.startsWith('/') ? `Running ${text.split(/\s/)[0]}…` : 'Waiting for the reply…'));
    try {
      const t = await api.sessions.send(id, text);
      this.composer.value = '';
      this.drafts.delete(id);
      app.sessionsStale();
      this.showTurn(t, text);
      if (t.session_id && t.session_id !== id) {
        this.id = t.session_id; // the conversation rotated into its continuation
      }
      await this.load();
    } catch (raw) {
      const e = toApiError(raw);
      replace(this.reply, h('div', { class: 'reply error', role: 'alert' }, h('strong', {}, 'Not sent: '), `${e.message} (${e.code})`));
    } finally {
      this.sending = false;
      this.sendBtn.disabled = false;
      this.composer.readOnly = false;
      this.composer.focus();
    }
  }

  private showTurn(t: TurnDTO, text: string): void {
    const parts: Node[] = [];
    if (t.command) {
      parts.push(h('div', { class: 'reply-label' }, `/${t.command.replace(/^\//, '')}`), h('pre', { class: 'reply-text' }, t.output || '(no output)'));
    } else {
      parts.push(h('div', { class: 'reply-label' }, 'Reply'), h('pre', { class: 'reply-text' }, t.reply || '(empty reply)'));
      if (t.sent_text && t.sent_text !== text) {
        parts.push(h('details', {}, h('summary', {}, 'As sent to the model'), h('pre', { class: 'reply-text' }, t.sent_text)));
      }
    }
    const notes: string[] = [];
    if ((t.tool_calls ?? []).length > 0) notes.push(`tools: ${(t.tool_calls ?? []).join(', ')}`);
    if (t.compactions > 0) notes.push(plural(t.compactions, 'compaction'));
    if (t.rotated) notes.push('the conversation continues in a new session');
    if (notes.length) parts.push(h('div', { class: 'muted small' }, notes.join(' · ')));
    parts.push(button('Dismiss', { class: 'btn small plain' }, () => clear(this.reply)));
    replace(this.reply, h('div', { class: 'reply-box', 'data-testid': 'reply' }, ...parts));
  }
}

function sessionLink(id: string, label: string): HTMLAnchorElement {
  const a = h('a', { href: '#', class: 'chain', title: id }, label);
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    app.go('transcript', id);
  });
  return a;
}

function message(m: MessageDTO): HTMLElement {
  const cls = ['msg', `role-${m.role.replace(/[^a-z_-]/gi, '')}`];
  if (m.marker) cls.push(`marker-${m.marker.replace(/[^a-z_-]/gi, '')}`);
  else if (m.compaction) cls.push('marker-other');
  const head = h(
    'div',
    { class: 'msg-head' },
    h('span', { class: 'role' }, m.role),
    m.tool_name ? h('span', { class: 'badge tool' }, m.tool_name) : null,
    m.marker === 'summary' ? h('span', { class: 'badge marker' }, 'compaction summary') : null,
    m.marker === 'stub' ? h('span', { class: 'badge marker' }, 'pruned tool output') : null,
    h('span', { class: 'spacer' }),
    h('time', { class: 'muted small', title: absolute(m.created_at) }, shortTime(m.created_at)),
  );
  const el = h('article', { class: cls.join(' '), 'data-testid': 'message', 'data-role': m.role, 'data-message-id': m.id }, head, content(m));
  if (m.sent_content !== null && m.sent_content !== m.content) {
    el.append(h('details', { class: 'sent' }, h('summary', {}, 'As sent to the model'), h('div', { class: 'content' }, m.sent_content)));
  }
  return el;
}

/** content renders a message: Markdown for what people and models write,
 * plain monospace text for tool output and pruned stubs. */
function content(m: MessageDTO): HTMLElement {
  if (m.role === 'tool' || m.marker === 'stub') return h('div', { class: 'content plain' }, m.content);
  const el = h('div', { class: 'content md' });
  el.append(renderMarkdown(m.content));
  return el;
}

function compactionCard(c: CompactionDTO): HTMLElement {
  const tokens = `${c.before_tokens === null ? '?' : num(c.before_tokens)} → ${c.after_tokens === null ? '?' : num(c.after_tokens)} tokens`;
  const bits = [tokens];
  if (c.messages_removed !== null) bits.push(`${plural(c.messages_removed, 'message')} removed`);
  const el = h(
    'aside',
    { class: 'compaction-card', 'data-testid': 'compaction-card', 'aria-label': 'Compaction' },
    h('div', { class: 'cc-head' }, h('strong', {}, `Compaction: ${c.kind || 'unknown'}`), c.reason ? h('span', { class: 'muted' }, ` · ${c.reason}`) : null, h('span', { class: 'spacer' }), h('time', { class: 'muted small', title: absolute(c.created_at) }, shortTime(c.created_at))),
    h('div', {}, bits.join(' · ')),
  );
  if (c.old_session_id && c.session_id && c.old_session_id !== c.session_id) {
    el.append(h('div', { class: 'small' }, 'Rotated from ', sessionLink(c.old_session_id, shortID(c.old_session_id)), ' into ', sessionLink(c.session_id, shortID(c.session_id))));
  }
  return el;
}

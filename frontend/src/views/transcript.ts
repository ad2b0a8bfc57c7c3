// One session: header, lineage, messages with compaction markers and
// cards, and a composer for a message or a slash command.

import { api, on, setWindowTitle, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, countdown, inWords, num, plural, relative, runningWhere, shortID, shortTime } from '../format';
import { archiveOrUnarchive, deleteSessions, renameSession, restoreSessions, sessionMenu, togglePin, type Target } from '../actions';
import { loadMarkdown, markdownReady, markWords, onLinkClick, renderMarkdown } from '../markdown';
import { openMenu } from '../menu';
import { runBulk } from '../ops';
import { app, type OpenAt, type View } from '../state';
import { TranscriptStore } from '../stores/transcript';
import type { CommandDTO, MessageDTO, SessionDTO, TurnDTO } from '../types';
import { attachmentsView, replyFiles, sentFiles } from './attachments';
import { processNotices, processNoticesSummary, processNoticesView, subagentStatus, toolCall, toolResult } from './toolview';

const shownAtFirst = 400;

export class TranscriptView implements View {
  readonly el: HTMLElement;
  readonly store = new TranscriptStore({ get: api.sessions.get, conversation: api.conversations.get });
  private readonly head: HTMLElement;
  private readonly lineage: HTMLElement;
  private readonly body: HTMLElement;
  private readonly reply: HTMLElement;
  private readonly composer: HTMLTextAreaElement;
  private readonly sendBtn: HTMLButtonElement;
  private readonly stopBtn: HTMLButtonElement;
  private followTimer = 0; // a reload while a turn runs here elsewhere
  private stoppingElsewhere = ''; // the session whose turn elsewhere is being stopped
  private modelStatus = ''; // what the turn running in this session waits on (a rate limit, a fallback), from the runs event
  private statusSince = 0; // when modelStatus last changed, for its countdown
  private statusTimer = 0;
  /** the session a turn under way was sent to ('' when none) */
  private sentTo = '';
  private readonly composerRow: HTMLElement;
  private readonly elsewhere: HTMLElement;
  private sending = false;
  private scrollToEnd = true;
  /** the session whose reply and draft are on screen */
  private shownID = '';
  private readonly drafts = new Map<string, string>();
  private readonly hints: HTMLElement;
  private commands: CommandDTO[] | null = null;

  constructor() {
    const back = button('← Back', { class: 'btn plain', title: 'Back to the list (Escape)', 'data-testid': 'back' }, () => this.leave());
    const menuBtn = button('⋯', { class: 'btn plain tx-menu', title: 'Session actions', 'aria-label': 'Session actions', 'data-testid': 'transcript-menu' }, () => {
      const t = this.target();
      if (t) openMenu(sessionMenu(t), menuBtn, 'Session actions');
    });
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
    this.composer.addEventListener('input', () => {
      this.drafts.set(this.store.id, this.composer.value);
      void this.renderHints();
    });
    this.sendBtn = button('Send', { class: 'btn primary', 'data-testid': 'send' }, () => void this.send());
    this.stopBtn = button('Stop', { class: 'btn', 'data-testid': 'stop', title: 'Stop the turn under way (what it stored stays)', hidden: '' }, () => void this.stop());
    // Typing "/" lists the commands that match, with the hint for their
    // arguments (args_hint) and what they do; a click fills the name in.
    this.hints = h('ul', { class: 'command-hints', role: 'listbox', 'aria-label': 'Commands', 'data-testid': 'command-hints', hidden: '' });
    this.composerRow = h('div', { class: 'composer-wrap' }, this.hints, h('div', { class: 'composer-row' }, this.composer, this.sendBtn, this.stopBtn));
    this.elsewhere = h('div', { class: 'elsewhere', 'data-testid': 'continues', role: 'note', hidden: true });
    this.el = h(
      'section',
      { class: 'view transcript-view', 'aria-label': 'Transcript' },
      h('div', { class: 'tx-top' }, back, this.head, menuBtn),
      this.lineage,
      this.body,
      this.reply,
      this.composerRow,
      this.elsewhere,
    );
    // A turn of this session that ran elsewhere (a scheduled run, a chat
    // platform, a terminal) ended: its messages are shown.
    on('activity', (evs) => {
      const id = this.store.id;
      if (!id || this.sending || !evs.some((e) => e.hook === 'on_session_end' && (e.payload as { session_id?: string } | null)?.session_id === id)) return;
      void this.store.load().catch(() => undefined);
    });
    // A turn of this session began or ended elsewhere: say so (and show
    // the message it began with).
    on('runs', (d) => {
      const s = this.store.session;
      if (!s) return;
      const run = (d.running ?? []).find((r) => r.session_id === s.id);
      const status = run?.status ?? '';
      if (status !== this.modelStatus) {
        this.modelStatus = status;
        this.statusSince = Date.now();
      }
      this.showModelStatus();
      if (this.sending || this.store.error) return;
      const now = run?.platform ?? '';
      if (now === (s.running_in ?? '')) return;
      s.running_in = now;
      void this.store.load().catch(() => undefined);
    });
    this.store.changes.subscribe((c) => {
      if (c === 'loading') replace(this.head, h('h1', { class: 'tx-title' }, 'Loading…'));
      else if (c === 'loaded') {
        this.render();
        // The Markdown engine is a chunk of its own, fetched after the list's
        // first paint: a transcript opened before it arrived shows its text
        // as it is at once, then again as Markdown when the engine is there.
        // (Waiting for it instead held the whole transcript, title included,
        // for seconds in the window right after its launch.)
        if (!markdownReady()) {
          const id = this.store.id;
          void loadMarkdown().then(() => {
            if (markdownReady() && this.store.id === id && this.store.session && !this.store.error) this.render();
          });
        }
      }
      else this.renderError();
    });
  }

  /** openAt sets where the next show lands: a search hit's message. */
  openAt(id: string, at?: OpenAt): void {
    this.store.open(id, at);
  }

  private async renderHints(): Promise<void> {
    const text = this.composer.value;
    const m = /^\/([^\s]*)$/.exec(text);
    if (!m) {
      this.hints.hidden = true;
      return;
    }
    if (this.commands === null) {
      try {
        this.commands = (await api.sessions.commands()) ?? [];
      } catch {
        this.commands = [];
      }
    }
    const prefix = (m[1] ?? '').toLowerCase();
    const matches = this.commands.filter((c) => c.name.startsWith(prefix)).slice(0, 8);
    if (matches.length === 0 || this.composer.value !== text) {
      this.hints.hidden = matches.length === 0;
      return;
    }
    replace(
      this.hints,
      ...matches.map((c) => {
        const li = h(
          'li',
          { role: 'option', 'data-testid': `hint-${c.name}` },
          h('code', {}, `/${c.name}`),
          c.args_hint ? h('span', { class: 'args-hint' }, ` ${c.args_hint}`) : null,
          h('span', { class: 'muted' }, ` — ${c.description}${c.plugin ? ` (${c.plugin})` : c.skill ? ' (skill)' : ''}`),
        );
        li.addEventListener('click', () => {
          this.composer.value = `/${c.name} `;
          this.drafts.set(this.store.id, this.composer.value);
          this.hints.hidden = true;
          this.composer.focus();
        });
        return li;
      }),
    );
    this.hints.hidden = false;
  }

  show(id?: string): void {
    this.commands = null; // plugins may have changed: ask again
    if (id && id !== this.store.id) this.store.open(id);
    this.el.dataset.session = this.store.id ?? ''; // which session shows (tests and tools read it)
    if (this.store.id !== this.shownID) {
      this.shownID = this.store.id;
      clear(this.reply);
      this.composer.value = this.drafts.get(this.store.id) ?? '';
    }
    this.scrollToEnd = true;
    void this.store.load();
    this.body.focus({ preventScroll: true });
  }

  escape(): boolean {
    this.leave();
    return true;
  }

  key(ev: KeyboardEvent): boolean {
    const t = this.target();
    if (!t || ev.ctrlKey || ev.metaKey || ev.altKey) return false;
    if (ev.key === 'e') void archiveOrUnarchive(t);
    else if (ev.key === 'F2') void renameSession(t);
    else if (ev.key === 'p') void togglePin(t);
    else if (ev.key === 'Delete') void deleteSessions(t);
    else return false;
    return true;
  }

  /** target is this session, for the actions. */
  private target(): Target | null {
    const s = this.store.session;
    if (!s) return null;
    return {
      sessions: [s],
      done: (op) => {
        if (op === 'delete' || op === 'purge') this.leave();
        else void this.store.load();
      },
      changed: () => void this.store.load(),
    };
  }

  private leave(): void {
    app.go('sessions');
  }

  private render(): void {
    const st = this.store;
    const s = st.session!;
    this.renderHead(s);
    this.renderParts();
    this.renderItems(st.firstShown(shownAtFirst));
    this.renderComposer();
    this.renderRunning(s);
    const hit = this.markHit();
    if (hit) hit.scrollIntoView({ block: 'center' });
    else if (this.scrollToEnd) this.body.scrollTop = this.body.scrollHeight;
  }

  private renderError(): void {
    const e = this.store.error!;
    replace(this.head, h('h1', { class: 'tx-title' }, e.code === 'not_found' ? 'Session not found' : 'Could not load the session'));
    replace(this.body, h('p', { class: 'error-text' }, e.message));
    clear(this.lineage);
  }

  /** markHit marks the search's words and outlines the matching message. */
  private markHit(): HTMLElement | null {
    const at = this.store.at;
    if (!at) return null;
    // the words the server matched (stems and prefixes included), else the query's
    const words = this.store.hitWords().join(' ') || at.query || '';
    if (words) for (const c of Array.from(this.body.querySelectorAll('.msg .content'))) markWords(c, words);
    const el = at.messageID ? this.body.querySelector<HTMLElement>(`[data-message-id="${at.messageID}"]`) : null;
    el?.classList.add('hit');
    return el ?? this.body.querySelector('mark');
  }

  private renderComposer(): void {
    const c = this.store.continuation();
    this.composerRow.hidden = c.kind !== 'open';
    this.elsewhere.hidden = c.kind === 'open';
    this.elsewhere.dataset.kind = c.kind;
    switch (c.kind) {
      case 'continues':
        replace(this.elsewhere, 'This subagent has finished; its conversation continues in ', sessionLink(c.id, c.title || shortID(c.id)), '.');
        break;
      case 'archived':
        replace(
          this.elsewhere,
          'This session is archived. ',
          button('Unarchive', { class: 'btn small', 'data-testid': 'unarchive-here' }, () => void this.unarchive()),
          ' to continue it.',
        );
        break;
      case 'trash':
        replace(
          this.elsewhere,
          `This session is in the trash (deleted for good ${c.purgeAfter ? relative(c.purgeAfter) : 'when the trash is emptied'}). `,
          button('Restore', { class: 'btn small', 'data-testid': 'restore-here' }, () => void this.restore()),
          ' to continue it.',
        );
        break;
      case 'ended':
        replace(this.elsewhere, `This session has ended${c.reason ? ` (${c.reason.replace(/_/g, ' ')})` : ''}: it takes no more messages.`);
        break;
    }
  }

  private async restore(): Promise<void> {
    const t = this.target();
    if (t) await restoreSessions(t);
  }

  private async unarchive(): Promise<void> {
    const r = await runBulk('unarchive', [this.store.id]);
    if (r) void this.store.load();
  }

  private renderHead(s: SessionDTO): void {
    const meta = h(
      'div',
      { class: 'tx-meta' },
      h('span', { class: 'badge' }, s.source),
      s.platform && s.platform !== s.source ? h('span', { class: 'badge platform', 'data-testid': 'tx-platform' }, s.platform) : null,
      s.sender_id || s.sender_name
        ? h('span', { class: 'badge', 'data-testid': 'tx-sender', title: `sender id ${s.sender_id}` }, `from ${s.sender_name || s.sender_id}${s.sender_name && s.sender_id ? ` (${s.sender_id})` : ''}`)
        : null,
      h('span', { class: 'badge' }, `profile ${s.profile}`),
      s.where === 'trash' ? h('span', { class: 'badge trash' }, 'in the trash') : s.archived ? h('span', { class: 'badge arch' }, 'archived') : null,
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

  /** renderParts links the parts of a chain to their dividers. */
  private renderParts(): void {
    clear(this.lineage);
    const parts = this.store.chain?.parts ?? [];
    if (parts.length <= 1) return;
    this.lineage.append(h('span', { class: 'muted' }, `${parts.length} parts, read as one: `));
    parts.forEach((p, i) => {
      if (i > 0) this.lineage.append(h('span', { class: 'sep', 'aria-hidden': 'true' }, ' → '));
      const a = h('a', { href: '#', class: 'chain', title: p.session_id }, `${p.index}. ${p.title || '(untitled)'}`);
      a.addEventListener('click', (ev) => {
        ev.preventDefault();
        const target = this.body.querySelector(`[data-part-start="${p.index}"]`);
        if (target) target.scrollIntoView({ block: 'start' });
        else if (this.body.querySelector('.more')) {
          this.renderItems(0);
          this.body.querySelector(`[data-part-start="${p.index}"]`)?.scrollIntoView({ block: 'start' });
        }
      });
      this.lineage.append(a);
    });
  }

  /** renderItems shows the chain from item start on: messages, and a
   * divider where each part begins ("Part 2 of 3 · compacted: …"). */
  private renderItems(start: number): void {
    const items = this.store.items;
    clear(this.body);
    if (items.length === 0) {
      this.body.append(h('p', { class: 'muted empty' }, 'No messages yet.'));
      return;
    }
    if (start > 0) {
      this.body.append(
        button(`Show ${num(start)} earlier items`, { class: 'btn small plain more' }, () => {
          this.renderItems(0);
          this.markHit();
        }),
      );
    }
    const frag = document.createDocumentFragment();
    let part = 0;
    for (let i = start; i < items.length; i++) {
      const it = items[i]!;
      if (it.kind === 'divider' && it.divider) {
        frag.append(divider(it.divider.text || `Part ${it.divider.part} of ${it.divider.of}`, it.divider.part));
      } else if (it.message) {
        const el = message(it.message);
        if (it.part !== part && !frag.querySelector(`[data-part-start="${it.part}"]`)) el.dataset.partStart = String(it.part);
        frag.append(el);
      }
      part = it.part;
    }
    this.body.append(frag);
  }

  private async send(): Promise<void> {
    const text = this.composer.value.trim();
    if (!text || this.sending) return;
    this.sending = true;
    this.sendBtn.disabled = true;
    this.composer.readOnly = true;
    const id = this.store.id;
    this.sentTo = id;
    this.sendBtn.hidden = true;
    this.stopBtn.hidden = false;
    this.stopBtn.disabled = false;
    replace(this.reply, h('div', { class: 'reply-pending' }, text.startsWith('/') ? `Running ${text.split(/\s/)[0]}…` : 'Waiting for the reply…'));
    if (!text.startsWith('/')) this.showPending(text);
    const unwatch = this.watchSubagents(id);
    try {
      const t = await api.sessions.send(id, text);
      this.composer.value = '';
      this.drafts.delete(id);
      app.sessionsStale();
      if (t.stopped) {
        // Stopped on purpose: the message was stored, with anything the
        // turn stored before it stopped; it is in the transcript now.
        replace(this.reply, h('div', { class: 'reply stopped', 'data-testid': 'reply-stopped' }, 'Stopped. The message and anything the turn stored before stay in the transcript.'));
        await this.store.load();
        return;
      }
      this.showTurn(t, text);
      this.store.moved(t.session_id); // the conversation rotated into its continuation
      this.shownID = this.store.id;
      this.scrollToEnd = true;
      await this.store.load();
    } catch (raw) {
      const e = toApiError(raw);
      replace(this.reply, h('div', { class: 'reply error', role: 'alert' }, h('strong', {}, 'Not sent: '), e.message));
      // What was stored before the failure, and nothing that was not.
      this.body.querySelector('[data-testid=message-pending]')?.remove();
      void this.store.load().catch(() => undefined);
    } finally {
      unwatch();
      this.sending = false;
      this.sentTo = '';
      this.stopBtn.hidden = true;
      this.sendBtn.hidden = false;
      this.sendBtn.disabled = false;
      this.composer.readOnly = false;
      this.composer.focus();
    }
  }

  /** watchSubagents shows, while a turn this page sent runs, the
   * subagents it hands tasks to (delegate_task): each one's task and how
   * far it got, every 1.5 s, until the returned func is called. */
  private watchSubagents(id: string): () => void {
    const since = Date.now() - 1000;
    let stopped = false;
    let timer = 0;
    const tick = async (): Promise<void> => {
      const rows = await api.conversations.subagents(id).catch(() => null);
      if (stopped || !rows) return;
      // In the order they started (side by side: not always the tasks' order).
      const mine = rows.filter((c) => Date.parse(c.session.started_at) >= since).sort((a, b) => a.session.started_at.localeCompare(b.session.started_at) || a.session.id.localeCompare(b.session.id));
      const pending = this.reply.querySelector('.reply-pending');
      if (!pending || !mine.length) return;
      const list = h(
        'ul',
        { class: 'subagents-at-work', 'data-testid': 'subagents-at-work' },
        ...mine.map((c) => {
          const s = c.session;
          const state = s.ended_at ? (subagentStatus[s.end_reason ?? '']?.toLowerCase() ?? 'ended') : 'working';
          return h('li', { 'data-state': state }, h('span', { class: 'subagent-goal' }, s.title || shortID(s.id)), h('span', { class: 'muted' }, ` · ${state} · ${plural(c.total_messages, 'message')}`));
        }),
      );
      const head = h('div', { class: 'muted small' }, mine.length === 1 ? 'A subagent works on a task:' : `${mine.length} subagents work on tasks:`);
      pending.querySelector('[data-testid=subagents]')?.remove();
      pending.append(h('div', { 'data-testid': 'subagents' }, head, list));
    };
    const loop = (): void => {
      timer = window.setTimeout(() => void tick().finally(() => !stopped && loop()), 1500);
    };
    loop();
    return () => {
      stopped = true;
      window.clearTimeout(timer);
    };
  }

  /** showPending shows the message just sent at the end of the transcript
   * while its turn runs; the transcript reloaded after the turn replaces it
   * with the stored message. */
  private showPending(text: string): void {
    this.body.querySelector('.empty')?.remove();
    const el = h(
      'article',
      { class: 'msg role-user pending', 'data-testid': 'message-pending', 'aria-busy': 'true' },
      h('div', { class: 'msg-head' }, h('span', { class: 'role' }, 'user'), h('span', { class: 'spacer' }), h('span', { class: 'muted small' }, 'sent · the turn runs')),
      h('div', { class: 'content' }, text),
    );
    this.body.append(el);
    this.body.scrollTop = this.body.scrollHeight;
  }

  /** renderRunning says when a turn this page did not send runs in the
   * session (the scheduler's, a chat platform's, a terminal's, a
   * background process's end told), with a Stop for it, and holds Send
   * back meanwhile. */
  private renderRunning(s: SessionDTO): void {
    const shown = this.reply.querySelector('[data-testid=running-elsewhere]');
    if (this.sending) return;
    // A message now would run beside that turn: Atrium refuses it (a slash
    // command, typed with Enter, still answers).
    this.sendBtn.disabled = !!s.running_in;
    this.sendBtn.title = s.running_in ? 'A turn is running in this session: wait for it to end, or stop it, then send' : '';
    if (!s.running_in) {
      if (shown) clear(this.reply);
      return;
    }
    const id = s.id;
    this.follow(id);
    if (this.stoppingElsewhere === id) return; // "Stopping…" stays
    const stop = button('Stop', { class: 'btn small', 'data-testid': 'stop-elsewhere', title: 'Stop that turn (what it stored stays)' }, () => void this.stopElsewhere(id, stop));
    replace(
      this.reply,
      h('div', { class: 'reply-pending running-elsewhere', 'data-testid': 'running-elsewhere' }, h('span', {}, `A turn is running in this session, in ${runningWhere(s.running_in)}. `), stop),
    );
    this.showModelStatus();
  }

  /** showModelStatus shows, under the pending reply, what the turn waits
   * on when it waits on its model ("Rate limited. Waiting 4.2s (attempt
   * 1/3)...", counting down each second, a switch to a fallback model);
   * nothing otherwise. */
  private showModelStatus(): void {
    window.clearInterval(this.statusTimer);
    const pending = this.reply.querySelector('.reply-pending');
    pending?.querySelector('[data-testid=model-status]')?.remove();
    if (!pending || !this.modelStatus) return;
    const text = () => inWords(countdown(this.modelStatus, Date.now() - this.statusSince));
    const line = h('div', { class: 'muted small model-status', 'data-testid': 'model-status', role: 'status' }, text());
    pending.append(line);
    if (!/Waiting \d/.test(this.modelStatus)) return;
    this.statusTimer = window.setInterval(() => {
      if (!line.isConnected) window.clearInterval(this.statusTimer);
      else line.textContent = text();
    }, 1000);
  }

  /** follow reloads the transcript every 2 s while a turn runs in it
   * elsewhere, so that what that turn stores shows as it goes. */
  private follow(id: string): void {
    if (this.followTimer) return;
    this.followTimer = window.setTimeout(() => {
      this.followTimer = 0;
      if (this.store.id !== id || !this.store.session?.running_in || this.sending) return;
      void this.store.load().catch(() => undefined); // renders, and follows again while it runs
    }, 2000);
  }

  /** stopElsewhere stops a turn another surface runs, then shows what it
   * stored once it has ended. */
  private async stopElsewhere(id: string, btn: HTMLButtonElement): Promise<void> {
    btn.disabled = true;
    this.stoppingElsewhere = id;
    try {
      await this.stopAndWait(id);
    } finally {
      this.stoppingElsewhere = '';
    }
  }

  private async stopAndWait(id: string): Promise<void> {
    try {
      await api.sessions.stop(id);
    } catch (raw) {
      const e = toApiError(raw);
      if (e.code !== 'not_found') {
        replace(this.reply, h('div', { class: 'reply error', role: 'alert' }, h('strong', {}, 'Not stopped: '), e.message));
        return;
      }
    }
    replace(this.reply, h('div', { class: 'reply-pending', 'data-testid': 'stopping-elsewhere' }, 'Stopping…'));
    // The turn ends in its own process within a moment: wait for that
    // (its on_session_end also reloads the transcript when live events flow).
    for (let i = 0; i < 50 && this.store.id === id; i++) {
      const s = await api.sessions.get(id).catch(() => null);
      if (!s || !s.running_in) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    if (this.store.id !== id) return;
    replace(this.reply, h('div', { class: 'reply stopped', 'data-testid': 'reply-stopped' }, 'Stopped. What the turn stored before stays in the transcript.'));
    await this.store.load().catch(() => undefined);
  }

  /** stop asks for the turn under way to stop; its send then ends. */
  private async stop(): Promise<void> {
    if (!this.sending || !this.sentTo) return;
    this.stopBtn.disabled = true;
    replace(this.reply, h('div', { class: 'reply-pending' }, 'Stopping…'));
    try {
      await api.sessions.stop(this.sentTo);
    } catch (raw) {
      // Nothing runs any more (it just ended): its send says how it went.
      const e = toApiError(raw);
      if (e.code !== 'not_found') replace(this.reply, h('div', { class: 'reply error', role: 'alert' }, h('strong', {}, 'Not stopped: '), e.message));
    }
  }

  private showTurn(t: TurnDTO, text: string): void {
    const parts: Node[] = [];
    if (t.command) {
      const out = h('div', { class: 'reply-text md' });
      out.append(renderMarkdown(t.output || '(no output)'));
      parts.push(h('div', { class: 'reply-label' }, `/${t.command.replace(/^\//, '')}`), out);
    } else {
      const earlier = t.earlier ?? [];
      if (earlier.length > 0) {
        // A hook (a Claude Code Stop hook) kept the turn going: the earlier
        // replies, each followed in the transcript by what the agent was told.
        const list = h('div', {});
        for (const r of earlier) {
          const one = h('div', { class: 'reply-text md' });
          one.append(renderMarkdown(r || '(empty reply)'));
          list.append(one);
        }
        parts.push(h('details', { 'data-testid': 'earlier-replies' },
          h('summary', {}, `${plural(earlier.length, 'earlier reply', 'earlier replies')}: a hook kept the turn going`), list));
      }
      const out = h('div', { class: 'reply-text md' });
      out.append(renderMarkdown(t.reply || '(empty reply)'));
      parts.push(h('div', { class: 'reply-label' }, 'Reply'), out);
      if (t.sent_text && t.sent_text !== text) {
        parts.push(h('details', {}, h('summary', {}, 'As sent to the model'), h('pre', { class: 'reply-text' }, t.sent_text)));
      }
    }
    const notes: string[] = [];
    if ((t.tool_calls ?? []).length > 0) notes.push(`tools: ${(t.tool_calls ?? []).join(', ')}`);
    if (t.compactions > 0) notes.push(plural(t.compactions, 'compaction'));
    if (t.rotated) notes.push('the conversation continues in a new session');
    notes.push(...(t.notes ?? []));
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
  // A background process's end or watched line, told to the model in the
  // person's place.
  const ends = m.role === 'user' && !m.marker ? processNotices(m.content) : null;
  if (ends) cls.push('marker-process-end');
  const head = h(
    'div',
    { class: 'msg-head' },
    h('span', { class: 'role' }, ends ? 'Atrium' : m.marker === 'hook_feedback' ? 'hook' : m.role),
    ends
      ? h('span', { class: 'badge marker', title: 'A background process the model started ended, or printed a line it watches for; Atrium told the model so, in your place' }, processNoticesSummary(ends))
      : null,
    m.tool_name ? h('span', { class: 'badge tool' }, m.tool_name) : null,
    m.marker === 'hook_feedback' ? h('span', { class: 'badge marker', title: 'A Stop hook kept the turn going with this instruction; the person did not write it' }, 'Stop hook feedback') : null,
    m.marker === 'summary' ? h('span', { class: 'badge marker' }, 'compaction summary') : null,
    m.marker === 'stub' ? h('span', { class: 'badge marker' }, 'pruned tool output') : null,
    h('span', { class: 'spacer' }),
    h('time', { class: 'muted small', title: absolute(m.created_at) }, shortTime(m.created_at)),
  );
  const body = ends
    ? h('div', { class: 'content' }, processNoticesView(ends), h('details', { class: 'tool-raw' }, h('summary', {}, 'As the model reads it'), h('div', { class: 'content plain' }, m.content)))
    : content(m);
  const el = h('article', { class: cls.join(' '), 'data-testid': 'message', 'data-role': m.role, 'data-message-id': m.id }, head, body);
  if (m.sent_content !== null && m.sent_content !== m.content) {
    el.append(h('details', { class: 'sent' }, h('summary', {}, 'As sent to the model'), h('div', { class: 'content' }, m.sent_content)));
  }
  return el;
}

/** content renders a message: Markdown for what people and models write,
 * plain monospace text for tool output and pruned stubs. */
function content(m: MessageDTO): HTMLElement {
  if (m.tool_name && !m.marker) {
    // The machine's tools, as a person reads them; the JSON the model
    // read stays one click away.
    const view = m.role === 'tool' ? toolResult(m.tool_name, m.content) : m.role === 'assistant' ? toolCall(m.tool_name, m.content) : null;
    if (view) {
      return h('div', { class: 'content' }, view, h('details', { class: 'tool-raw' }, h('summary', {}, 'As the model reads it'), h('div', { class: 'content plain' }, m.content)));
    }
  }
  if (m.role === 'tool' || m.marker === 'stub') return h('div', { class: 'content plain' }, m.content);
  // Files sent on a chat platform, either way, as files.
  const files = m.marker ? null : m.role === 'user' ? sentFiles(m.content) : m.role === 'assistant' ? replyFiles(m.content) : null;
  const el = h('div', { class: 'content md' });
  if (files) {
    el.append(attachmentsView(files.files, m.role === 'user' ? 'person' : 'agent'));
    if (files.text) el.append(renderMarkdown(files.text));
    el.append(h('details', { class: 'tool-raw' }, h('summary', {}, m.role === 'user' ? 'As the model reads it' : 'As the model wrote it'), h('div', { class: 'content plain' }, m.content)));
    return el;
  }
  el.append(renderMarkdown(m.content));
  return el;
}

function divider(text: string, part: number): HTMLElement {
  return h('div', { class: 'part-divider', role: 'separator', 'data-testid': 'part-divider', 'data-part-start': part }, h('span', {}, text));
}


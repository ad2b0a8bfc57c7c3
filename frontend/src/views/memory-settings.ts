// What the agent remembers: the curated memory every new conversation
// starts with (USER.md, what it keeps about you; MEMORY.md, its own notes,
// in the profile's memories/ folder, as the familiar agent keeps them).
// The agent changes them with its memory tool; here a person reads them,
// forgets an entry (with an undo) or adds one. Each change is saved at once.

import { api, toApiError } from '../api';
import { button, h, replace } from '../dom';
import { num } from '../format';
import { showAction, showMessage } from '../ops';
import type { MemoryDTO, MemoryFileDTO } from '../api/gen/dto';

const files: Array<{ key: 'user' | 'notes'; title: string; add: string; empty: string }> = [
  { key: 'user', title: 'About you', add: 'Something the agent should know about you', empty: 'Nothing yet.' },
  { key: 'notes', title: 'Its notes', add: 'A fact about your setup or conventions', empty: 'Nothing yet.' },
];

export class MemorySection {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;

  constructor() {
    this.body = h('div', { class: 'memory-files' });
    this.el = h(
      'section',
      { class: 'standing memory', 'aria-labelledby': 'memory-title', 'data-testid': 'settings-memory' },
      h('h2', { id: 'memory-title' }, 'What the agent remembers'),
      h(
        'p',
        { class: 'muted small' },
        'Every new conversation starts with these (a conversation already under way keeps what it started with). The agent adds and edits them with its memory tool; you can forget an entry or add one here.',
      ),
      this.body,
    );
  }

  async load(): Promise<void> {
    try {
      this.render(await api.settings.memory());
    } catch (e) {
      replace(this.body, h('p', { class: 'form-error', role: 'alert' }, `Could not read it: ${toApiError(e).message}`));
    }
  }

  private render(m: MemoryDTO): void {
    replace(this.body, ...files.map((f) => this.file(f, m[f.key])));
  }

  private file(f: (typeof files)[number], d: MemoryFileDTO): HTMLElement {
    const name = d.path.split(/[\\/]/).pop() ?? d.path;
    const over = d.chars > d.limit;
    const el = h(
      'div',
      { class: 'memory-file', 'data-target': d.target, 'data-testid': `memory-${d.target}` },
      h(
        'h3',
        {},
        `${f.title} `,
        h('code', { class: 'muted small', title: d.path }, name),
        h('span', { class: `memory-usage small ${over ? 'warn-text' : 'muted'}`, 'data-testid': 'memory-usage' }, ` ${num(d.chars)} / ${num(d.limit)} characters${over ? ' — over budget' : ''}`),
      ),
    );
    if (d.off) {
      el.append(
        h('p', { class: 'muted small' }, 'Turned off: ', h('code', {}, d.target === 'user' ? 'memory.user_profile_enabled' : 'memory.memory_enabled'), ' is false in config.yaml, so conversations neither see nor change it.'),
      );
    }
    if (d.error) el.append(h('p', { class: 'form-error', role: 'alert' }, `Could not read it: ${d.error}`));
    const entries = d.entries ?? [];
    if (entries.length === 0 && !d.error) el.append(h('p', { class: 'muted small', 'data-testid': 'memory-none' }, f.empty));
    if (entries.length) {
      const list = h('ul', { class: 'standing-list memory-list' });
      for (const entry of entries) {
        const forget = button('Forget', { class: 'btn plain small', 'data-testid': 'memory-forget', 'aria-label': `Forget: ${entry.slice(0, 80)}` }, () => void this.forget(d.target, entry, forget));
        list.append(h('li', { 'data-entry': entry }, h('span', { class: 'memory-entry' }, entry), forget));
      }
      el.append(list);
    }
    if (!d.off) el.append(this.adder(f, d));
    return el;
  }

  private adder(f: (typeof files)[number], d: MemoryFileDTO): HTMLElement {
    const id = `memory-add-${d.target}`;
    const input = h('input', { id, type: 'text', placeholder: f.add, 'aria-label': `${f.add} (${f.title})`, autocomplete: 'off', 'data-testid': 'memory-add-text' });
    const err = h('div', { class: 'form-error small', role: 'alert', id: `${id}-error` });
    const add = h('button', { type: 'submit', class: 'btn plain small', 'data-testid': 'memory-add' }, 'Add');
    const form = h('form', { class: 'memory-add', novalidate: true }, input, add);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text) {
        err.textContent = 'Write the entry first.';
        input.focus();
        return;
      }
      add.disabled = true;
      err.textContent = '';
      api.settings
        .remember({ target: d.target, text })
        .then((m) => this.render(m))
        .catch((e: unknown) => {
          err.textContent = toApiError(e).message;
          input.setAttribute('aria-invalid', 'true');
          add.disabled = false;
          input.focus();
        });
    });
    return h('div', {}, form, err);
  }

  private async forget(target: string, entry: string, btn: HTMLButtonElement): Promise<void> {
    btn.disabled = true;
    try {
      this.render(await api.settings.forget({ target, text: entry }));
      showAction('ok', 'Forgotten', entry.length > 120 ? `${entry.slice(0, 120)}…` : entry, 'Undo', () => {
        api.settings
          .remember({ target, text: entry })
          .then((m) => this.render(m))
          .catch((e: unknown) => showMessage('warn', 'It was not put back', toApiError(e).message));
      });
    } catch (e) {
      showMessage('warn', 'It was not forgotten', toApiError(e).message);
      void this.load(); // as the file has it now (changed by a conversation, or by hand)
    }
  }
}

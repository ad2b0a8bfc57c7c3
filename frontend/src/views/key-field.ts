// A key's field in Settings: a password input, "Save key" and "Remove from
// .env" (asked first). The key goes to the profile's .env on its own (not
// with the form's Save) and is never shown back; the section around it says
// where its variable is set.

import { api, toApiError } from '../api';
import { button, h } from '../dom';
import { confirmModal } from '../modal';
import { described, errorLine } from './fields';
import type { KeyStatusDTO } from '../api/gen/dto';

export interface KeyFieldOptions {
  /** the input's id and data-testid; its help line is `${id}-help` (the caller's status) */
  id: string;
  /** data-testid prefix of the buttons and the done line: `${testid}-save`, `-remove`, `-remove-confirm`, `-done` */
  testid: string;
  /** what the key is for, said when asking before removing it ("this model") */
  use: string;
  /** called with the variable's status after each write */
  written: (k: KeyStatusDTO) => void;
}

export class KeyField {
  readonly input: HTMLInputElement;
  /** the input and its buttons */
  readonly row: HTMLElement;
  /** what the last write did */
  readonly done: HTMLElement;
  readonly err: HTMLElement;
  private readonly save: HTMLButtonElement;
  private readonly remove: HTMLButtonElement;
  private key: KeyStatusDTO | null = null;

  constructor(private readonly o: KeyFieldOptions) {
    this.input = h('input', { ...described(o.id), type: 'password', autocomplete: 'off', spellcheck: 'false', placeholder: 'Paste a new key' });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault(); // not the form's Save: the key is saved on its own
        void this.saveKey();
      }
    });
    this.save = button('Save key', { class: 'btn', 'data-testid': `${o.testid}-save`, type: 'button' }, () => void this.saveKey());
    this.remove = button('Remove from .env', { class: 'btn plain', 'data-testid': `${o.testid}-remove`, type: 'button' }, () => void this.removeKey());
    this.done = h('span', { class: 'ok-text', role: 'status', 'aria-live': 'polite', 'data-testid': `${o.testid}-done` });
    this.err = errorLine(o.id);
    this.row = h('div', { class: 'key-row' }, this.input, this.save, this.remove);
  }

  /** The variable's name ("" when none is needed). */
  get name(): string {
    return this.key?.name ?? '';
  }

  /** show sets which variable the field is for (none: disabled) and whether .env has it. */
  show(k: KeyStatusDTO | null): void {
    this.key = k;
    this.input.disabled = this.save.disabled = !k?.name;
    this.remove.hidden = !k?.in_env_file;
  }

  clearError(): void {
    this.err.textContent = '';
    this.input.removeAttribute('aria-invalid');
  }

  error(msg: string): void {
    this.err.textContent = msg;
    this.input.setAttribute('aria-invalid', 'true');
  }

  private async saveKey(): Promise<void> {
    this.clearError();
    this.done.textContent = '';
    if (!this.key?.name) return;
    if (this.input.value.trim() === '') {
      this.error('Paste the key first.');
      this.input.focus();
      return;
    }
    await this.write(this.input.value, 'Saved in .env. The next turn uses it.');
  }

  private async removeKey(): Promise<void> {
    if (!this.key?.name) return;
    const ok = await confirmModal({
      title: `Remove ${this.key.name} from .env?`,
      body: h('p', {}, `The key is gone from the file for good: you would paste it again to use ${this.o.use}.`),
      confirmLabel: 'Remove',
      confirmTestid: `${this.o.testid}-remove-confirm`,
      danger: true,
    });
    if (ok) await this.write('', 'Removed from .env. Turns go without it from the next one.');
  }

  private async write(value: string, done: string): Promise<void> {
    this.save.disabled = this.remove.disabled = true;
    try {
      const k = await api.settings.setKey({ name: this.key!.name, value });
      this.show(k);
      this.input.value = '';
      this.done.textContent = done;
      this.o.written(k);
    } catch (e) {
      this.error(toApiError(e).message);
    } finally {
      this.save.disabled = !this.key?.name;
      this.remove.disabled = false;
    }
  }
}

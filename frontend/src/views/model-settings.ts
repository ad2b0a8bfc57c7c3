// The Model part of Settings: config.yaml's model block (saved with the
// form) and its key, kept in the profile's .env (saved on its own, never
// shown back).

import { api, toApiError } from '../api';
import { button, h, replace } from '../dom';
import { described, errorLine, fieldRow } from './fields';
import { KeyField } from './key-field';
import type { KeyStatusDTO, ModelSettingsDTO } from '../api/gen/dto';

const providers: Array<[string, string]> = [
  ['offline', 'Offline: canned replies, no network'],
  ['openai', 'An OpenAI-compatible API at the base URL'],
  ['openrouter', 'OpenRouter'],
  ['lmstudio', 'LM Studio on this machine'],
  ['custom', 'custom: the server at the base URL (as the familiar agent says it)'],
  ['ollama', 'Ollama at the base URL'],
  ['vllm', 'vLLM at the base URL'],
  ['llamacpp', 'llama.cpp at the base URL'],
  ['auto', 'auto: the base URL, else OpenRouter'],
];

/** What each provider asks, and with which key, said under the choice. */
const providerHelp: Record<string, string> = {
  offline: 'Answers with canned replies, without any network: for trying Atrium out.',
  openai: 'Any server that speaks OpenAI’s chat completions API, at the base URL; its key from the key variable, if it needs one.',
  openrouter: 'OpenRouter’s API; its key from OPENROUTER_API_KEY (else OPENAI_API_KEY).',
  lmstudio: 'LM Studio’s local server (http://127.0.0.1:1234/v1 unless the base URL says otherwise).',
  custom: 'The OpenAI-compatible server at the base URL; OPENAI_API_KEY when it is set.',
  ollama: 'Ollama’s OpenAI-compatible API at the base URL.',
  vllm: 'vLLM’s OpenAI-compatible API at the base URL.',
  llamacpp: 'llama.cpp’s server at the base URL.',
  auto: 'The server at the base URL, else OpenRouter when OPENROUTER_API_KEY is set.',
};
const otherHelp = 'A provider of the familiar agent that is not an API Atrium speaks: choose openai or custom with its base URL.';

type Key = 'provider' | 'base_url' | 'name' | 'api_key_env' | 'context_window';

/** Words of a server message that point at a field. */
const words: Array<[Key, RegExp]> = [
  ['base_url', /base_url|base URL/i],
  ['api_key_env', /api_key_env|variable/i],
  ['context_window', /context_window|context_length/i],
  ['name', /model\.name|model\.default/i],
  ['provider', /provider/i],
];

export class ModelSection {
  readonly el: HTMLFieldSetElement;
  private readonly provider: HTMLSelectElement;
  private readonly inputs: Record<Exclude<Key, 'provider'>, HTMLInputElement>;
  private readonly errors = new Map<Key | 'key', HTMLElement>();
  private readonly problem: HTMLElement;
  private readonly keyStatus: HTMLElement;
  private readonly keyField: KeyField;
  private readonly checkBtn: HTMLButtonElement;
  private readonly checkOut: HTMLElement;
  private key: KeyStatusDTO | null = null;

  constructor() {
    const err = (k: Key | 'key', id: string) => {
      const e = errorLine(id);
      this.errors.set(k, e);
      return e;
    };
    this.provider = h('select', described('set-model-provider'));
    this.inputs = {
      base_url: h('input', { ...described('set-model-base_url'), type: 'url', placeholder: 'http://127.0.0.1:8080/v1', spellcheck: 'false', autocomplete: 'off' }),
      name: h('input', { ...described('set-model-name'), type: 'text', placeholder: 'the model the API names', spellcheck: 'false', autocomplete: 'off' }),
      api_key_env: h('input', { ...described('set-model-api_key_env'), type: 'text', placeholder: 'the provider’s usual one', spellcheck: 'false', autocomplete: 'off' }),
      context_window: h('input', { ...described('set-model-context_window'), type: 'number', min: 0, step: '1', inputmode: 'numeric' }),
    };
    this.problem = h('p', { class: 'form-error', role: 'alert', 'data-testid': 'model-problem' });
    this.provider.addEventListener('change', () => this.sayProvider());
    this.keyStatus = h('p', { class: 'key-status', id: 'set-model-key-help', 'data-testid': 'model-key-status', 'aria-live': 'polite' });
    this.keyField = new KeyField({ id: 'set-model-key', testid: 'model-key', use: 'this model', written: (k) => this.renderKey(k) });
    this.errors.set('key', this.keyField.err);
    this.checkBtn = button('Check the saved model', { class: 'btn', 'data-testid': 'model-check', type: 'button' }, () => void this.check());
    this.checkOut = h('span', { class: 'model-check-out', role: 'status', 'aria-live': 'polite', 'data-testid': 'model-check-out' });
    this.el = h(
      'fieldset',
      { class: 'field-group', 'data-testid': 'settings-model' },
      h('legend', {}, 'Model'),
      h('p', { class: 'help muted small' }, 'The model the turns of this profile ask, as config.yaml’s model block says it. The next turn asks what is saved here.'),
      this.problem,
      fieldRow('set-model-provider', 'Provider', this.provider, '', err('provider', 'set-model-provider')),
      fieldRow('set-model-base_url', 'Base URL', this.inputs.base_url, 'Where the API answers; empty for OpenRouter and LM Studio’s own.', err('base_url', 'set-model-base_url')),
      fieldRow('set-model-name', 'Model name', this.inputs.name, 'Sent with every request, as the API names it.', err('name', 'set-model-name')),
      fieldRow('set-model-api_key_env', 'Key variable', this.inputs.api_key_env, 'The variable holding the key (OPENAI_API_KEY…); empty: the provider’s usual one.', err('api_key_env', 'set-model-api_key_env')),
      fieldRow('set-model-context_window', 'Context window (tokens)', this.inputs.context_window, '0 = the default.', err('context_window', 'set-model-context_window')),
      h(
        'div',
        { class: 'field key-field', 'data-testid': 'model-key' },
        h('label', { for: 'set-model-key' }, 'Key'),
        this.keyStatus,
        this.keyField.row,
        this.keyField.done,
        this.keyField.err,
      ),
      h(
        'div',
        { class: 'field' },
        h('div', { class: 'key-row' }, this.checkBtn, this.checkOut),
        h('div', { class: 'help muted small' }, 'Asks the model, as saved and with its key as it is now, for one word.'),
      ),
    );
  }

  /** check asks the saved model for a word, and says how it went. */
  private async check(): Promise<void> {
    this.checkBtn.disabled = true;
    this.checkOut.className = 'model-check-out muted';
    this.checkOut.textContent = 'Asking…';
    try {
      const r = await api.settings.checkModel();
      if (r.ok) {
        this.checkOut.className = 'model-check-out ok-text';
        this.checkOut.textContent = r.provider === 'offline' ? `Offline: canned replies, no network.` : `${r.model || 'The model'} answered in ${r.latency_ms} ms: “${r.reply}”`;
      } else {
        this.checkOut.className = 'model-check-out error-text';
        this.checkOut.textContent = `No answer: ${r.error}`;
      }
    } catch (e) {
      this.checkOut.className = 'model-check-out error-text';
      this.checkOut.textContent = `Could not check: ${toApiError(e).message}`;
    } finally {
      this.checkBtn.disabled = false;
    }
  }

  fill(m: ModelSettingsDTO | null | undefined): void {
    replace(this.provider);
    const known = [...providers];
    const p = m?.provider || 'offline';
    if (!known.some(([v]) => v === p)) known.push([p, `${p}: not an API Atrium speaks`]);
    for (const [v, label] of known) this.provider.append(h('option', { value: v }, label));
    this.provider.value = p;
    this.sayProvider();
    this.inputs.base_url.value = m?.base_url ?? '';
    this.inputs.name.value = m?.name ?? '';
    this.inputs.api_key_env.value = m?.api_key_env ?? '';
    this.inputs.context_window.value = String(m?.context_window ?? 0);
    this.problem.textContent = m?.problem ?? '';
    this.problem.hidden = !m?.problem;
    this.renderKey(m?.key ?? null);
    this.clearErrors();
  }

  /** sayProvider puts what the chosen provider asks under the choice. */
  private sayProvider(): void {
    const help = this.el.querySelector('#set-model-provider-help');
    if (help) help.textContent = providerHelp[this.provider.value] ?? otherHelp;
  }

  private renderKey(k: KeyStatusDTO | null): void {
    this.key = k;
    const name = k?.name ?? '';
    const needed = name !== '';
    this.keyField.show(k);
    if (!needed) {
      replace(this.keyStatus, 'No key: this model is asked without one. Name a key variable above to use one.');
      return;
    }
    const code = h('code', {}, name);
    const where = h('code', {}, k!.env_path);
    switch (k!.source) {
      case 'environment':
        replace(this.keyStatus, code, ' is set in the environment Atrium started in, which goes first');
        if (k!.in_env_file) this.keyStatus.append(' (', where, ' has one too)');
        this.keyStatus.append('.');
        break;
      case 'env_file':
        replace(this.keyStatus, code, ' is kept in ', where, '.');
        break;
      default:
        replace(this.keyStatus, code, ' is not set: the model cannot be asked. Paste the key here to keep it in ', where, ' (only you can read it).');
    }
  }

  clearErrors(): void {
    for (const e of this.errors.values()) e.textContent = '';
    for (const i of [this.provider, ...Object.values(this.inputs), this.keyField.input]) i.removeAttribute('aria-invalid');
  }

  private fieldError(k: Key | 'key', msg: string): void {
    this.errors.get(k)!.textContent = msg;
    (k === 'key' ? this.keyField.input : k === 'provider' ? this.provider : this.inputs[k]).setAttribute('aria-invalid', 'true');
  }

  /** value is the block to save, or null (and the first bad field focused) when a field is wrong. */
  value(): ModelSettingsDTO | null {
    const n = Number(this.inputs.context_window.value.trim() || '0');
    if (!Number.isInteger(n) || n < 0) {
      this.fieldError('context_window', 'Enter a whole number, 0 or more.');
      this.inputs.context_window.focus();
      return null;
    }
    const url = this.inputs.base_url.value.trim();
    if (url && !/^https?:\/\/[^\s/]+/i.test(url)) {
      this.fieldError('base_url', 'An http:// or https:// address, as http://127.0.0.1:8080/v1.');
      this.inputs.base_url.focus();
      return null;
    }
    return {
      provider: this.provider.value,
      base_url: url,
      name: this.inputs.name.value.trim(),
      api_key_env: this.inputs.api_key_env.value.trim(),
      context_window: n,
      key: this.key ?? { name: '', source: '', in_env_file: false, env_path: '' },
    };
  }

  /** claim puts a server message under the field it names; false when it names none. */
  claim(message: string): boolean {
    if (!/model/i.test(message)) return false;
    const hit = words.find(([, re]) => re.test(message));
    if (!hit) return false;
    this.fieldError(hit[0], message);
    return true;
  }
}

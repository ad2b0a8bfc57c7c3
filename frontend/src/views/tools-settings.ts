// The agent's tools part of Settings: whether the model may use the
// terminal, the file tools, its memory and the web, where a conversation's
// commands start, how long a command may take and how many rounds of tools
// a turn may take (config.yaml's toolsets, terminal.cwd, terminal.timeout,
// agent.max_turns, as the familiar agent names them), which provider the
// web tools go through (web.backend), and which ends of background
// processes are told to the model (display.background_process_notifications). Saved with the form; the
// provider's key is saved on its own, to the profile's .env.

import { api, toApiError } from '../api';
import { h, replace } from '../dom';
import { described, errorLine, fieldRow } from './fields';
import { KeyField } from './key-field';
import type { KeyStatusDTO, ToolsSettingsDTO } from '../api/gen/dto';

type Key = 'terminal' | 'files' | 'memory' | 'web' | 'web_backend' | 'cwd' | 'timeout_seconds' | 'max_turns' | 'process_ends' | 'tool_progress';

/** The values of display.background_process_notifications. */
const processEnds: Array<[string, string]> = [
  ['all', 'Tell the model of every end and watched line'],
  ['result', 'Tell it of every end, not of watched lines'],
  ['error', 'Tell it only of failures (a non-zero exit code)'],
  ['off', 'Do not tell it: it polls or waits'],
];

/** The values of display.tool_progress. */
const toolProgress: Array<[string, string]> = [
  ['all', 'A line for each tool call'],
  ['new', 'A line when the tool changes'],
  ['verbose', 'Each tool call with its arguments'],
  ['log', 'None: write them to logs/tool_calls.log'],
  ['off', 'None'],
];

/** The web providers Atrium has, and the variable each one's key is in. */
const webProviders: Array<[string, string, string]> = [
  ['', 'Automatic (the one whose key is set)', ''],
  ['firecrawl', 'Firecrawl', 'FIRECRAWL_API_KEY'],
  ['tavily', 'Tavily', 'TAVILY_API_KEY'],
];

/** providerName is how a web.backend value is said. */
const providerName = (p: string): string => webProviders.find(([v]) => v === p && v)?.[1] ?? p;

/** Words of a server message that point at a field. */
const words: Array<[Key, RegExp]> = [
  ['web_backend', /web\.backend/i],
  ['cwd', /terminal\.cwd/i],
  ['timeout_seconds', /terminal\.timeout/i],
  ['max_turns', /max_turns/i],
  ['process_ends', /background_process_notifications/i],
  ['tool_progress', /tool_progress/i],
];

export class ToolsSection {
  readonly el: HTMLFieldSetElement;
  private readonly terminal: HTMLInputElement;
  private readonly files: HTMLInputElement;
  private readonly memory: HTMLInputElement;
  private readonly web: HTMLInputElement;
  private readonly webBackend: HTMLSelectElement;
  private readonly webStatus: HTMLElement;
  private readonly webKeyLabel: HTMLLabelElement;
  private readonly webKey: KeyField;
  private readonly cwd: HTMLInputElement;
  private readonly timeout: HTMLInputElement;
  private readonly maxTurns: HTMLInputElement;
  private readonly ends: HTMLSelectElement;
  private readonly progress: HTMLSelectElement;
  private readonly errors = new Map<Key, HTMLElement>();
  private readonly notes: HTMLElement;
  private current: ToolsSettingsDTO | null = null;

  constructor() {
    this.terminal = h('input', { ...described('set-tools-terminal'), type: 'checkbox' });
    this.files = h('input', { ...described('set-tools-files'), type: 'checkbox' });
    this.memory = h('input', { ...described('set-tools-memory'), type: 'checkbox' });
    this.web = h('input', { ...described('set-tools-web'), type: 'checkbox' });
    this.webBackend = h('select', described('set-tools-web-backend'));
    this.webBackend.addEventListener('change', () => this.sayWeb());
    // the status is the key input's help line
    this.webStatus = h('p', { class: 'key-status', id: 'set-tools-web-key-help', 'data-testid': 'set-tools-web-status', 'aria-live': 'polite' });
    this.webKeyLabel = h('label', { for: 'set-tools-web-key' }, 'Key');
    this.webKey = new KeyField({ id: 'set-tools-web-key', testid: 'set-tools-web-key', use: 'the web tools', written: () => void this.reloadWeb() });
    this.cwd = h('input', { ...described('set-tools-cwd'), type: 'text', placeholder: 'a terminal’s own folder; your home folder elsewhere', spellcheck: false, autocomplete: 'off' });
    this.timeout = h('input', { ...described('set-tools-timeout'), type: 'number', min: 0, max: 600, step: '1', inputmode: 'numeric' });
    this.maxTurns = h('input', { ...described('set-tools-max-turns'), type: 'number', min: 0, max: 10000, step: '1', inputmode: 'numeric' });
    this.ends = h('select', described('set-tools-process-ends'));
    this.progress = h('select', described('set-tools-progress'));
    this.notes = h('div', { 'data-testid': 'settings-tools-notes' });
    this.el = h(
      'fieldset',
      { class: 'field-group', 'data-testid': 'settings-tools' },
      h('legend', {}, 'Agent tools'),
      h(
        'p',
        { class: 'help muted small' },
        'What the model may do on this machine. Applies at the next turn. A command that could destroy data still waits for your approval; one nobody can undo never runs.',
      ),
      this.check('set-tools-terminal', 'Terminal', this.terminal, 'Run shell commands (and background processes) in the conversation’s folder.', 'terminal'),
      this.check('set-tools-files', 'Files', this.files, 'Read, write, edit and search files.', 'files'),
      this.check('set-tools-memory', 'Memory', this.memory, 'Keep notes, and what it learns about you, for later conversations (below). Off, conversations neither see nor change them.', 'memory'),
      this.check('set-tools-web', 'Web search and page reading (web_search, web_extract)', this.web, 'Search the web and read pages, through a provider and with its key: the page’s text is what the model reads next.', 'web'),
      h(
        'div',
        { class: 'tools-web', 'data-testid': 'settings-tools-web' },
        this.field('set-tools-web-backend', 'Provider', this.webBackend, 'Who searches and reads the pages for Atrium (web.backend).', 'web_backend'),
        h('div', { class: 'field key-field' }, this.webKeyLabel, this.webStatus, this.webKey.row, this.webKey.done, this.webKey.err),
      ),
      this.field('set-tools-cwd', 'Start folder', this.cwd, 'Where a conversation’s commands and relative paths start (terminal.cwd): an absolute folder, or ~/…; empty for the default.', 'cwd'),
      this.field('set-tools-timeout', 'Command time (seconds)', this.timeout, 'How long a command may run when the model names no time; 0 = 180; at most 600.', 'timeout_seconds'),
      this.field('set-tools-max-turns', 'Tool rounds per turn', this.maxTurns, 'Then the model answers with what it has (agent.max_turns); 0 = 90.', 'max_turns'),
      this.field(
        'set-tools-process-ends',
        'When a background process ends',
        this.ends,
        'A command the model ran in the background asking to hear of its end (notify_on_complete), or of lines it watches for in its output (watch_patterns), starts a turn that tells it (display.background_process_notifications).',
        'process_ends',
      ),
      this.field(
        'set-tools-progress',
        'Tool calls shown in a chat',
        this.progress,
        'How a chat platform (Telegram, Slack) and a terminal chat are shown the tool calls of a turn as they start (display.tool_progress); a platform’s own display.platforms entry wins there.',
        'tool_progress',
      ),
      this.notes,
    );
  }

  private field(id: string, label: string, control: HTMLElement, help: string, key: Key): HTMLElement {
    const err = errorLine(id);
    this.errors.set(key, err);
    return fieldRow(id, label, control, help, err);
  }

  private check(id: string, label: string, box: HTMLInputElement, help: string, key: Key): HTMLElement {
    const err = errorLine(id);
    this.errors.set(key, err);
    return h('div', { class: 'field check' }, h('label', { for: id }, box, ` ${label}`), h('div', { class: 'help muted small', id: `${id}-help` }, help), err);
  }

  fill(t: ToolsSettingsDTO | null | undefined): void {
    this.current = t ?? null;
    this.el.hidden = !t;
    if (!t) return;
    this.terminal.checked = t.terminal;
    this.files.checked = t.files;
    this.memory.checked = t.memory;
    this.web.checked = t.web;
    // one written by hand that Atrium has not (exa, ...) is kept, so that saving keeps it
    const backends: Array<[string, string]> = webProviders.map(([v, label]) => [v, label]);
    if (!backends.some(([v]) => v === t.web_backend)) backends.push([t.web_backend, `${t.web_backend}: not a provider Atrium has`]);
    replace(this.webBackend, ...backends.map(([v, label]) => h('option', { value: v }, label)));
    this.webBackend.value = t.web_backend;
    this.sayWeb();
    this.cwd.value = t.cwd;
    this.timeout.value = String(t.timeout_seconds);
    this.maxTurns.value = String(t.max_turns);
    const ends = [...processEnds];
    if (!ends.some(([v]) => v === t.process_ends)) ends.push([t.process_ends, t.process_ends]);
    replace(this.ends, ...ends.map(([v, label]) => h('option', { value: v }, label)));
    this.ends.value = t.process_ends;
    replace(this.progress, ...toolProgress.map(([v, label]) => h('option', { value: v }, label)));
    this.progress.value = t.tool_progress;
    const notes: HTMLElement[] = [];
    if (t.problem) notes.push(h('p', { class: 'form-error', role: 'alert' }, t.problem));
    if (t.own_lists?.length) {
      notes.push(
        h(
          'p',
          { class: 'muted small' },
          `These switches do not apply on ${t.own_lists.join(', ')}: platform_toolsets in config.yaml gives ${t.own_lists.length === 1 ? 'it a list' : 'them lists'} of ${t.own_lists.length === 1 ? 'its' : 'their'} own.`,
        ),
      );
    }
    replace(this.notes, ...notes);
  }

  /** sayWeb says which provider is in use and where its key is set (as
   * saved), and points the key field at the chosen provider's variable. */
  private sayWeb(): void {
    const t = this.current;
    if (!t) return;
    const k = t.web_key;
    const name = providerName(t.web_provider);
    const problem = t.web_problem ?? '';
    this.webStatus.classList.toggle('warn-text', problem !== '');
    if (problem) replace(this.webStatus, `Not offered: ${problem}.`);
    else if (k.source === 'env_file') replace(this.webStatus, `${name}: `, h('code', {}, k.name), ' is kept in ', h('code', {}, k.env_path), '.');
    else if (k.source === 'environment') {
      replace(this.webStatus, `${name}: `, h('code', {}, k.name), ' is set in the environment Atrium started in, which goes first');
      if (k.in_env_file) this.webStatus.append(' (', h('code', {}, k.env_path), ' has one too)');
      this.webStatus.append('.');
    } else replace(this.webStatus, `${name}: in use without a key${t.web_provider === 'firecrawl' ? ' (a self-hosted one, at FIRECRAWL_API_URL)' : ''}.`);
    const chosen = this.webBackend.value;
    if (chosen !== t.web_backend) {
      this.webStatus.append(' ', h('span', { class: 'muted' }, `Save the settings to switch to ${chosen ? providerName(chosen) : 'the provider whose key is set'}.`));
    }
    // the chosen provider's variable; automatic (or one Atrium has not): the one in use
    const variable = webProviders.find(([v]) => v === chosen && v)?.[2] ?? k.name;
    const status: KeyStatusDTO = variable === k.name ? k : { name: variable, source: '', in_env_file: false, env_path: k.env_path };
    this.webKey.show(status);
    this.webKeyLabel.textContent = variable ? `Key: ${variable}` : 'Key';
  }

  /** reloadWeb reads the web status again (a key was saved), leaving the form's edits. */
  private async reloadWeb(): Promise<void> {
    try {
      const t = (await api.settings.get()).tools;
      if (!t || !this.current) return;
      this.current = { ...this.current, web_provider: t.web_provider, web_key: t.web_key, web_problem: t.web_problem };
      this.sayWeb();
    } catch (e) {
      this.webKey.error(`Saved, but the status could not be read again: ${toApiError(e).message}`);
    }
  }

  clearErrors(): void {
    for (const e of this.errors.values()) e.textContent = '';
    for (const i of [this.cwd, this.timeout, this.maxTurns, this.webBackend, this.ends]) i.removeAttribute('aria-invalid');
    this.webKey.clearError();
  }

  private error(key: Key, msg: string): void {
    this.errors.get(key)!.textContent = msg;
    ({ cwd: this.cwd, timeout_seconds: this.timeout, max_turns: this.maxTurns, web_backend: this.webBackend, process_ends: this.ends, tool_progress: this.progress } as Partial<Record<Key, HTMLElement>>)[key]?.setAttribute(
      'aria-invalid',
      'true',
    );
  }

  /** value is the section as the form says it, or null (errors shown) when
   * a field does not read; null too when nothing was loaded. */
  value(): ToolsSettingsDTO | null | undefined {
    if (!this.current) return undefined;
    const num = (input: HTMLInputElement, key: Key, max: number): number | null => {
      const raw = input.value.trim();
      const n = raw === '' ? 0 : Number(raw);
      if (!Number.isInteger(n)) this.error(key, 'Enter a whole number.');
      else if (n < 0) this.error(key, 'At least 0.');
      else if (n > max) this.error(key, `At most ${max}.`);
      else return n;
      input.focus();
      return null;
    };
    const cwd = this.cwd.value.trim();
    if (cwd && cwd !== '.' && !cwd.startsWith('/') && cwd !== '~' && !cwd.startsWith('~/')) {
      this.error('cwd', 'An absolute folder (/…) or one in your home (~/…).');
      this.cwd.focus();
      return null;
    }
    const timeout = num(this.timeout, 'timeout_seconds', 600);
    if (timeout === null) return null;
    const maxTurns = num(this.maxTurns, 'max_turns', 10000);
    if (maxTurns === null) return null;
    return {
      ...this.current,
      terminal: this.terminal.checked,
      files: this.files.checked,
      memory: this.memory.checked,
      web: this.web.checked,
      web_backend: this.webBackend.value,
      cwd,
      timeout_seconds: timeout,
      max_turns: maxTurns,
      process_ends: this.ends.value,
      tool_progress: this.progress.value,
    };
  }

  /** claim puts a server message under the field it names; false when it names none. */
  claim(message: string): boolean {
    const hit = words.find(([, re]) => re.test(message));
    if (!hit) return false;
    this.error(hit[0], message);
    return true;
  }
}

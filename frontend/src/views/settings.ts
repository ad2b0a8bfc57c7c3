// Settings: the editable keys of config.yaml and the startup profile.

import { api, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { showMessage } from '../ops';
import { app, type View } from '../state';
import type { SettingsDTO } from '../types';
import type { StandingApprovalsDTO } from '../api/gen/dto';
import { described, errorLine, fieldRow } from './fields';
import { ModelSection } from './model-settings';
import { MemorySection } from './memory-settings';
import { SkillsSection } from './skills-settings';
import { ToolsSection } from './tools-settings';

interface Field {
  key: 'hook_timeout_seconds' | 'retention_days' | 'archive_idle_days' | 'trash_days' | 'approval_timeout_seconds';
  label: string;
  help: string;
  min: number;
  max?: number;
  step: string;
  integer: boolean;
  /** words of a server message that point at this field */
  words: RegExp;
  /** shown under "Approvals", which applies at the next ask */
  approvals?: boolean;
}

const fields: Field[] = [
  {
    key: 'hook_timeout_seconds',
    label: 'Hook timeout (seconds)',
    help: 'How long one plugin callback may run; 0 = no bound; at most 600.',
    min: 0,
    max: 600,
    step: 'any',
    integer: false,
    words: /hook|callback/i,
  },
  { key: 'retention_days', label: 'Retention (days)', help: 'Ended, inactive sessions older than this are pruned.', min: 1, step: '1', integer: true, words: /retention/i },
  {
    key: 'trash_days',
    label: 'Keep deleted sessions (days)',
    help: 'Deleted sessions wait in the trash this long and can be restored; 0 = delete at once.',
    min: 0,
    step: '1',
    integer: true,
    words: /trash/i,
  },
  {
    key: 'archive_idle_days',
    label: 'Archive idle sessions after (days)',
    help: 'Idle sessions are archived automatically; 0 = off.',
    min: 0,
    step: '1',
    integer: true,
    words: /idle|archive/i,
  },
  {
    key: 'approval_timeout_seconds',
    label: 'Time to answer (seconds)',
    help: '0 = 5 minutes here, no limit in a terminal chat; at most 3600. No answer in time is a no.',
    min: 0,
    max: 3600,
    step: 'any',
    integer: false,
    words: /approvals\.timeout|timeout is/i,
    approvals: true,
  },
];

const modes: Array<[string, string]> = [
  ['manual', 'Ask me'],
  ['smart', 'Smart: a reviewing model decides a risky command first, and asks me when unsure'],
  ['off', 'Do not ask: run every call a plugin asks about'],
];

export class SettingsView implements View {
  readonly el: HTMLElement;
  private readonly inputs = new Map<Field['key'], HTMLInputElement>();
  private readonly errors = new Map<string, HTMLElement>();
  private readonly profile: HTMLSelectElement;
  private readonly formError: HTMLElement;
  private readonly saved: HTMLElement;
  private readonly saveBtn: HTMLButtonElement;
  private readonly info: HTMLElement;
  private current: SettingsDTO | null = null;
  private readonly standing: HTMLElement;
  private readonly mode: HTMLSelectElement;
  private readonly reviewer: HTMLInputElement;
  private readonly policy: HTMLTextAreaElement;
  private readonly smart: HTMLElement;
  private readonly model: ModelSection;
  private readonly tools: ToolsSection;
  private readonly memory: MemorySection;
  private readonly skills: SkillsSection;

  constructor() {
    const form = h('form', { class: 'settings', novalidate: true, 'aria-label': 'Settings' });
    this.mode = h('select', described('set-approvals-mode'));
    this.reviewer = h('input', { ...described('set-reviewer'), type: 'text', placeholder: 'the main model', autocomplete: 'off', spellcheck: 'false' });
    this.policy = h('textarea', { ...described('set-smart-policy'), rows: '3', placeholder: 'Approve removing build/ and dist/. Escalate anything under /srv.' });
    this.smart = h(
      'div',
      { class: 'smart-reviewer', 'data-testid': 'settings-smart' },
      this.field('set-reviewer', 'Reviewing model', this.reviewer, 'auxiliary.approval.model, asked of the main provider unless auxiliary.approval names its own (provider, base_url); empty: the main model.', 'approvals_reviewer_model'),
      this.field('set-smart-policy', 'Your rules for it', this.policy, 'approvals.smart_policy, added to its instructions. Whatever it is unsure of is asked of you.', 'approvals_smart_policy'),
    );
    this.mode.addEventListener('change', () => this.showSmart());
    const approvals = h(
      'fieldset',
      { class: 'field-group', 'data-testid': 'settings-approvals' },
      h('legend', {}, 'Approvals'),
      h('p', { class: 'help muted small' }, 'When a plugin asks before a tool call runs, or a terminal command could destroy data. Applies at the next ask, in every window, terminal chat, chat platform and scheduled run of this profile.'),
      this.field('set-approvals-mode', 'Asking', this.mode, 'Smart puts a terminal command that could destroy data to a reviewing model before you; a plugin\'s ask is always yours. Off runs those calls without asking anyone (each one is logged); a plugin that blocks still blocks.', 'approvals_mode'),
      this.smart,
    );
    for (const f of fields) {
      const id = `set-${f.key}`;
      const input = h('input', { ...described(id), type: 'number', min: f.min, max: f.max, step: f.step, inputmode: f.integer ? 'numeric' : 'decimal' });
      this.inputs.set(f.key, input);
      (f.approvals ? approvals : form).append(this.field(id, f.label, input, f.help, f.key));
    }
    this.profile = h('select', described('set-profile'));
    this.model = new ModelSection();
    this.tools = new ToolsSection();
    this.memory = new MemorySection();
    this.skills = new SkillsSection();
    form.append(this.field('set-profile', 'Profile at startup', this.profile, 'Applies at next launch.', 'profile'), approvals, this.model.el, this.tools.el);
    this.formError = h('div', { class: 'form-error', role: 'alert' });
    this.saved = h('span', { class: 'ok-text', role: 'status', 'aria-live': 'polite' });
    this.saveBtn = h('button', { type: 'submit', class: 'btn primary', 'data-testid': 'settings-save' }, 'Save');
    form.append(this.formError, h('div', { class: 'form-buttons' }, this.saveBtn, button('Revert', { class: 'btn plain' }, () => this.fill()), this.saved));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.save();
    });
    form.addEventListener('input', () => (this.saved.textContent = ''));
    this.info = h('dl', { class: 'info muted small' });
    this.standing = h('div', { 'data-testid': 'standing-approvals' });
    this.el = h(
      'section',
      { class: 'view settings-view', 'aria-label': 'Settings' },
      h('div', { class: 'page-head' }, h('h1', {}, 'Settings')),
      h('p', { class: 'muted' }, 'These keys of config.yaml apply once saved, in every open window, dashboard and gateway of this profile: the model and the agent’s tools at its next turn, approvals at the next ask. The startup profile applies at the next launch.'),
      form,
      this.memory.el,
      this.skills.el,
      h(
        'section',
        { class: 'standing', 'aria-labelledby': 'standing-title' },
        h('h2', { id: 'standing-title' }, 'Always allowed'),
        h(
          'p',
          { class: 'muted small' },
          'Tool calls a plugin asks about that you answered “Always allow”: they run without asking, in every conversation and scheduled run of this profile. Revoke one and it is asked again from its next call.',
        ),
        this.standing,
      ),
      this.info,
    );
  }

  /** field is a labelled control with its help and its error line (kept under errKey). */
  private field(id: string, label: string, control: HTMLElement, help: string, errKey: string): HTMLElement {
    const err = errorLine(id);
    this.errors.set(errKey, err);
    return fieldRow(id, label, control, help, err);
  }

  show(): void {
    void this.load();
    void this.loadStanding();
    void this.memory.load();
    void this.skills.load();
    this.renderInfo();
  }

  private async loadStanding(): Promise<void> {
    try {
      this.renderStanding(await api.settings.standingApprovals());
    } catch (e) {
      replace(this.standing, h('p', { class: 'form-error', role: 'alert' }, `Could not read them: ${toApiError(e).message}`));
    }
  }

  private renderStanding(d: StandingApprovalsDTO): void {
    clear(this.standing);
    const rules = d.rules ?? [];
    if (d.error) this.standing.append(h('p', { class: 'form-error', role: 'alert' }, `None is honoured: ${d.error}`));
    else if (rules.length === 0) this.standing.append(h('p', { class: 'muted', 'data-testid': 'standing-none' }, 'None.'));
    const list = h('ul', { class: 'standing-list' });
    for (const rule of rules) {
      const revoke = button('Revoke', { class: 'btn plain small', 'data-testid': 'standing-revoke', 'aria-label': `Revoke ${rule}` }, async () => {
        revoke.disabled = true;
        try {
          this.renderStanding(await api.settings.revokeStandingApproval(rule));
        } catch (e) {
          showMessage('warn', `${rule} was not revoked`, toApiError(e).message);
          void this.loadStanding(); // as the file has it now (revoked elsewhere, or by hand)
        }
      });
      list.append(h('li', { 'data-rule': rule }, h('code', {}, rule), revoke));
    }
    if (rules.length) this.standing.append(list);
    this.standing.append(h('p', { class: 'muted small' }, 'Kept as command_allowlist in ', h('code', {}, d.path), '.'));
  }

  private renderInfo(): void {
    const i = app.info;
    clear(this.info);
    for (const [k, v] of [
      ['Version', i.version],
      ['Surface', i.platform],
      ['Profile', i.profile],
      ['Home', i.home],
    ] as const) {
      if (v) this.info.append(h('dt', {}, k), h('dd', {}, h('code', {}, v)));
    }
  }

  private async load(): Promise<void> {
    try {
      this.current = await api.settings.get();
      this.fill();
    } catch (e) {
      this.formError.textContent = `Could not read the settings: ${toApiError(e).message}`;
    }
  }

  private fill(): void {
    const s = this.current;
    if (!s) return;
    for (const f of fields) this.inputs.get(f.key)!.value = String(s[f.key] ?? '');
    clear(this.profile);
    const profiles = [...new Set([...(s.profiles ?? []), s.profile].filter((p) => p))];
    for (const p of profiles) this.profile.append(h('option', { value: p }, p === app.info.profile ? `${p} (open now)` : p));
    this.profile.value = s.profile;
    this.profile.disabled = profiles.length <= 1 && !s.profile;
    clear(this.mode);
    const mode = s.approvals_mode ?? 'manual';
    for (const [v, label] of modes) this.mode.append(h('option', { value: v }, label));
    this.mode.value = mode;
    this.reviewer.value = s.approvals_reviewer_model ?? '';
    this.policy.value = s.approvals_smart_policy ?? '';
    this.showSmart();
    this.model.fill(s.model);
    this.tools.fill(s.tools);
    this.clearErrors();
  }

  /** showSmart shows the reviewer's fields while Smart is chosen. */
  private showSmart(): void {
    this.smart.hidden = this.mode.value !== 'smart';
  }

  private clearErrors(): void {
    for (const e of this.errors.values()) e.textContent = '';
    for (const i of this.inputs.values()) i.removeAttribute('aria-invalid');
    this.profile.removeAttribute('aria-invalid');
    this.mode.removeAttribute('aria-invalid');
    this.reviewer.removeAttribute('aria-invalid');
    this.policy.removeAttribute('aria-invalid');
    this.model.clearErrors();
    this.tools.clearErrors();
    this.formError.textContent = '';
  }

  private fieldError(key: string, msg: string): void {
    this.errors.get(key)!.textContent = msg;
    const named: Record<string, HTMLElement> = {
      profile: this.profile,
      approvals_mode: this.mode,
      approvals_reviewer_model: this.reviewer,
      approvals_smart_policy: this.policy,
    };
    const input = named[key] ?? this.inputs.get(key as Field['key']);
    input?.setAttribute('aria-invalid', 'true');
  }

  private async save(): Promise<void> {
    this.clearErrors();
    this.saved.textContent = '';
    // the keys this form does not show are sent as null: left as they are
    const out: SettingsDTO = {
      hook_timeout_seconds: 0,
      retention_days: 0,
      archive_idle_days: 0,
      trash_days: null,
      trash_automatic: null,
      auto_prune: null,
      approvals_mode: this.mode.value || null,
      approval_timeout_seconds: null,
      // the reviewer's keys are sent while Smart is chosen, else left as they are
      approvals_reviewer_model: null,
      approvals_smart_policy: null,
      profile: this.profile.value,
      model: null,
      tools: null,
    };
    let bad: HTMLElement | null = null;
    for (const f of fields) {
      const input = this.inputs.get(f.key)!;
      const raw = input.value.trim();
      const n = Number(raw);
      let msg = '';
      if (raw === '' || !Number.isFinite(n)) msg = 'Enter a number.';
      else if (f.integer && !Number.isInteger(n)) msg = 'Enter a whole number.';
      else if (n < f.min) msg = `At least ${f.min}.`;
      else if (f.max !== undefined && n > f.max) msg = `At most ${f.max}.`;
      if (msg) {
        this.fieldError(f.key, msg);
        bad ??= input;
      }
      out[f.key] = n;
    }
    if (this.mode.value === 'smart') {
      const reviewer = this.reviewer.value.trim();
      if (reviewer.length > 200 || /\s/.test(reviewer)) {
        this.fieldError('approvals_reviewer_model', 'One model’s name, at most 200 characters.');
        bad ??= this.reviewer;
      }
      if ([...this.policy.value.trim()].length > 4000) {
        this.fieldError('approvals_smart_policy', 'At most 4000 characters.');
        bad ??= this.policy;
      }
      out.approvals_reviewer_model = reviewer;
      out.approvals_smart_policy = this.policy.value.trim();
    }
    if (bad) {
      bad.focus();
      return;
    }
    const model = this.model.value();
    if (!model) return;
    out.model = model;
    const tools = this.tools.value();
    if (tools === null) return;
    out.tools = tools ?? null;
    this.saveBtn.disabled = true;
    try {
      this.current = await api.settings.set(out);
      this.fill();
      this.saved.textContent = 'Saved.';
    } catch (raw) {
      const e = toApiError(raw);
      if (this.model.claim(e.message) || this.tools.claim(e.message)) return;
      // Put the server's message under the field it names, if it names one.
      const f =
        fields.find((x) => x.words.test(e.message)) ??
        (/approvals\.mode|the mode/i.test(e.message)
          ? ('approvals_mode' as const)
          : /auxiliary\.approval/i.test(e.message)
            ? ('approvals_reviewer_model' as const)
            : /smart_policy/i.test(e.message)
              ? ('approvals_smart_policy' as const)
              : /profile/i.test(e.message)
                ? ('profile' as const)
                : undefined);
      if (typeof f === 'string') this.fieldError(f, e.message);
      else if (f) this.fieldError(f.key, e.message);
      else replace(this.formError, e.message);
    } finally {
      this.saveBtn.disabled = false;
    }
  }
}

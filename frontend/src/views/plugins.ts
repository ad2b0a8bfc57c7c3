// Plugins: bundled, user and project plugins in one table; enable/disable,
// install, remove, reload, open folder; live state from plugin-state.

import { api, isDesktop, on, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { confirmModal } from '../modal';
import type { View } from '../state';
import type { PluginDTO, ShellHooksDTO } from '../types';
import type { EnvNeedDTO } from '../api/gen/dto';
import { envNeedField } from './env-need';

const sourceOrder: Record<string, number> = { bundled: 0, user: 1, project: 2 };

export class PluginsView implements View {
  readonly el: HTMLElement;
  private readonly tbody: HTMLTableSectionElement;
  private readonly notice: HTMLElement;
  private readonly path: HTMLInputElement;
  private readonly force: HTMLInputElement;
  private readonly installBtn: HTMLButtonElement;
  private readonly installMsg: HTMLElement;
  private readonly rows = new Map<string, HTMLTableRowElement>();
  private plugins = new Map<string, PluginDTO>();
  private gen = 0;

  constructor() {
    this.notice = h('div', { class: 'notice', role: 'status', 'aria-live': 'polite' });
    const reload = button('Reload', { class: 'btn', 'data-testid': 'plugins-reload', title: 'Discover plugins again and restart them' }, () => void this.reload());
    this.path = h('input', { type: 'text', class: 'path', placeholder: '/path/to/plugin-folder or plugin.zip', 'aria-label': 'Plugin folder or .zip to install', 'data-testid': 'install-path', spellcheck: 'false' });
    this.path.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        void this.install();
      }
    });
    this.force = h('input', { type: 'checkbox', 'data-testid': 'install-force' });
    this.installBtn = button('Install', { class: 'btn primary', 'data-testid': 'install' }, () => void this.install());
    this.installMsg = h('div', { class: 'install-msg', role: 'status', 'aria-live': 'polite' });
    const browse = isDesktop()
      ? [
          button('Browse folder…', { class: 'btn', 'data-testid': 'browse-folder' }, () => void this.browse(false)),
          button('Browse .zip…', { class: 'btn', 'data-testid': 'browse-zip' }, () => void this.browse(true)),
        ]
      : [];
    const installForm = h(
      'div',
      { class: 'install' },
      h('h2', {}, 'Install a plugin'),
      h('div', { class: 'install-row' }, this.path, ...browse, h('label', { class: 'check' }, this.force, ' Overwrite existing'), this.installBtn),
      this.installMsg,
    );
    this.tbody = h('tbody');
    const table = h(
      'table',
      { class: 'plugins' },
      h(
        'thead',
        {},
        h('tr', {}, ...['Plugin', 'Enabled', 'State', 'Hooks', 'Commands', ''].map((t) => h('th', { scope: 'col' }, t))),
      ),
      this.tbody,
    );
    this.el = h(
      'section',
      { class: 'view plugins-view', 'aria-label': 'Plugins' },
      h('div', { class: 'page-head' }, h('h1', {}, 'Plugins'), h('span', { class: 'spacer' }), reload),
      this.notice,
      h('div', { class: 'table-wrap' }, table),
      this.hooksEl,
      installForm,
    );
    // A state change (started, crashed, restarting, cut off, stopped) is
    // shown at once; the full row (pid, registered hooks) is read again
    // when the view is visible.
    on('plugin-state', (p) => {
      const cur = this.plugins.get(p.name);
      if (cur && p.state !== 'removed') this.update({ ...cur, state: p.state, error: p.error ?? '' });
      if (this.el.isConnected && !this.el.hidden) this.reloadSoon();
    });
  }

  show(): void {
    void this.load();
  }

  private reloadTimer = 0;

  /** reloadSoon reads the list once a burst of state events has passed. */
  private reloadSoon(): void {
    window.clearTimeout(this.reloadTimer);
    this.reloadTimer = window.setTimeout(() => void this.load(), 300);
  }

  async load(): Promise<void> {
    const gen = ++this.gen;
    void this.loadHooks();
    try {
      const list = await api.plugins.list();
      if (gen !== this.gen) return;
      this.setAll(list ?? []);
    } catch (e) {
      if (gen !== this.gen) return;
      this.say('error', `Could not list plugins: ${toApiError(e).message}`);
    }
  }

  // ---- shell hooks: config.yaml's hooks:, approved here (the window) ----

  private readonly hooksEl = h('section', { class: 'shell-hooks', 'aria-label': 'Shell hooks', 'data-testid': 'shell-hooks' });

  private async loadHooks(): Promise<void> {
    try {
      this.renderHooks(await api.plugins.shellHooks());
    } catch (e) {
      replace(this.hooksEl, h('h2', {}, 'Shell hooks'), h('p', { class: 'muted' }, `Could not read the shell hooks: ${toApiError(e).message}`));
    }
  }

  private renderHooks(d: ShellHooksDTO): void {
    const hooks = d.hooks ?? [];
    const parts: (Node | string)[] = [h('h2', {}, 'Shell hooks')];
    if (hooks.length === 0) {
      parts.push(h('p', { class: 'muted' }, 'No shell hooks in config.yaml (its hooks: section, in the familiar agent\'s shape or Claude Code\'s).'));
    } else {
      const waiting = hooks.filter((x) => !x.approved).length;
      if (waiting > 0) {
        parts.push(
          h(
            'div',
            { class: 'notice warn', 'data-testid': 'hooks-waiting' },
            `${waiting === 1 ? '1 shell hook waits' : `${waiting} shell hooks wait`} for your approval and ${waiting === 1 ? 'does' : 'do'} not run until then. `,
            d.can_approve ? 'Approve only commands you trust: they run with your rights.' : `Approve ${waiting === 1 ? 'it' : 'them'} in the window or with atrium hooks approve.`,
          ),
        );
      }
      const tbody = h('tbody');
      for (const x of hooks) {
        const actions: HTMLElement[] = [];
        if (!x.approved && d.can_approve) {
          actions.push(button('Approve', { class: 'btn small primary', 'data-testid': 'hook-approve', title: `Let ${x.name} run ${x.command}` }, (ev) => void this.hookAction(ev.currentTarget as HTMLButtonElement, () => api.plugins.approveShellHook({ event: x.name, command: x.command }))));
        }
        if (x.approved) {
          actions.push(button('Revoke', { class: 'btn small', 'data-testid': 'hook-revoke', title: `Stop ${x.command} from running (every event)` }, (ev) => void this.hookAction(ev.currentTarget as HTMLButtonElement, () => api.plugins.revokeShellHook({ event: '', command: x.command }))));
        }
        const registered = x.registered_in ?? [];
        tbody.append(
          h(
            'tr',
            { 'data-testid': 'hook-row' },
            h('td', {}, x.name, x.name !== x.event ? h('span', { class: 'muted small' }, ` → ${x.event}`) : '', x.matcher ? h('div', { class: 'muted small' }, `matcher ${x.matcher}`) : ''),
            h('td', {}, h('code', { class: 'selectable' }, x.command), h('div', { class: 'muted small' }, `${x.timeout_seconds} s${x.fail_closed ? ', fails closed' : ''}`)),
            h('td', { 'data-testid': 'hook-consent' }, x.approved ? `approved${x.approved_at ? ` ${x.approved_at.slice(0, 10)}` : ''}` : h('strong', {}, 'waiting for approval')),
            h('td', { class: 'muted small' }, registered.length > 0 ? registered.join(', ') : x.approved ? 'not registered in a running process' : '—'),
            h('td', { class: 'actions' }, ...actions),
          ),
        );
      }
      parts.push(
        h('div', { class: 'table-wrap' }, h('table', { class: 'plugins hooks' }, h('thead', {}, h('tr', {}, ...['Event', 'Command', 'Consent', 'Registered in', ''].map((t) => h('th', { scope: 'col' }, t)))), tbody)),
      );
    }
    const warnings = d.warnings ?? [];
    if (warnings.length > 0) {
      const ul = h('ul', { class: 'warnings' });
      for (const w of warnings) ul.append(h('li', {}, w));
      parts.push(h('details', {}, h('summary', {}, `${warnings.length} entr${warnings.length === 1 ? 'y' : 'ies'} of config.yaml's hooks: cannot run`), ul));
    }
    replace(this.hooksEl, ...parts);
  }

  private async hookAction(btn: HTMLButtonElement, act: () => Promise<ShellHooksDTO>): Promise<void> {
    btn.disabled = true;
    try {
      this.renderHooks(await act());
    } catch (e) {
      btn.disabled = false;
      this.say('error', toApiError(e).message);
    }
  }

  private setAll(list: PluginDTO[]): void {
    this.plugins = new Map(list.map((p) => [p.name, p]));
    this.rows.clear();
    clear(this.tbody);
    const sorted = [...list].sort((a, b) => (sourceOrder[a.source] ?? 9) - (sourceOrder[b.source] ?? 9) || a.name.localeCompare(b.name));
    let group = '';
    for (const p of sorted) {
      if (p.source !== group) {
        group = p.source;
        this.tbody.append(h('tr', { class: 'group' }, h('th', { colspan: 6, scope: 'rowgroup' }, `${group} plugins`)));
      }
      const tr = this.row(p);
      this.rows.set(p.name, tr);
      this.tbody.append(tr);
    }
    if (list.length === 0) this.tbody.append(h('tr', {}, h('td', { colspan: 6, class: 'muted' }, 'No plugins found.')));
  }

  private update(p: PluginDTO): void {
    this.plugins.set(p.name, p);
    const old = this.rows.get(p.name);
    if (!old) {
      void this.load();
      return;
    }
    const focusedToggle = old.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.testid : undefined;
    const tr = this.row(p);
    old.replaceWith(tr);
    this.rows.set(p.name, tr);
    if (focusedToggle) tr.querySelector<HTMLElement>(`[data-testid="${focusedToggle}"]`)?.focus();
  }

  private row(p: PluginDTO): HTMLTableRowElement {
    const toggle = h('input', { type: 'checkbox', 'data-testid': 'plugin-toggle', 'aria-label': `Enable ${p.name}`, checked: p.enabled });
    toggle.addEventListener('change', () => void this.toggle(p.name, toggle.checked, toggle));
    const stateCell = h('td', { class: `state state-${p.state.replace(/[^a-z_-]/gi, '')}` }, h('span', { class: 'state-name' }, p.state));
    const where: string[] = [];
    if (p.state === 'running' && p.pid) where.push(`pid ${p.pid}`);
    if (p.state === 'running' && p.process) where.push(`in ${p.process}`);
    if (p.restarts) where.push(`restarted ${p.restarts}×`);
    if (where.length) stateCell.append(h('div', { class: 'muted small', 'data-testid': 'plugin-where' }, where.join(' · ')));
    if (p.error) stateCell.append(h('div', { class: 'error-text small' }, p.error));
    const actions = h('td', { class: 'actions' });
    if (p.dir) actions.append(button('Open folder', { class: 'btn small plain', 'data-testid': 'plugin-open' }, () => void this.open(p.name)));
    if (p.source === 'user') actions.append(button('Remove', { class: 'btn small danger', 'data-testid': 'plugin-remove' }, () => void this.remove(p.name)));
    const list = (xs: string[] | null) => ((xs ?? []).length ? (xs ?? []).join(', ') : '—');
    const warnings = p.warnings ?? [];
    const declared = p.registered
      ? null
      : h('div', { class: 'muted small', title: 'From plugin.yaml: what the plugin registers when it starts is what counts' }, '(declared, not started yet)');
    return h(
      'tr',
      { 'data-testid': 'plugin-row', 'data-name': p.name, 'data-enabled': String(p.enabled), 'data-state': p.state },
      h(
        'td',
        { class: 'name' },
        h('strong', {}, p.name),
        h('div', { class: 'muted small' }, [p.version || 'no version', p.source, p.runtime].join(' · ')),
        p.description ? h('div', { class: 'small' }, p.description) : null,
        warnings.length ? h('ul', { class: 'plain-list small warn-text', 'data-testid': 'plugin-warnings' }, ...warnings.map((w) => h('li', {}, w))) : null,
        ...(p.missing_env ?? []).map((e) => this.envNeed(p.name, e)),
      ),
      h('td', { class: 'toggle' }, h('label', { class: 'switch' }, toggle, h('span', { class: 'switch-label' }, p.enabled ? 'on' : 'off'))),
      stateCell,
      h('td', { class: 'small' }, list(p.hooks), declared),
      h('td', { class: 'small' }, list((p.commands ?? []).map((c) => `/${c}`))),
      actions,
    );
  }

  /** envNeed asks for a variable the plugin requires and nobody set, as
   * its installer does in the familiar agent. */
  private envNeed(plugin: string, e: EnvNeedDTO): HTMLElement {
    return envNeedField(plugin, e, 'plugin-env', async (value) => {
      try {
        this.update(await api.plugins.setEnv(plugin, { name: e.name, value }));
        this.say('ok', `${e.name} kept in .env. ${plugin} gets it when it starts again: Reload restarts the plugins.`);
        return true;
      } catch (err) {
        this.say('error', `${e.name} was not saved: ${toApiError(err).message}`);
        return false;
      }
    });
  }

  private say(kind: 'ok' | 'warn' | 'error', text: string): void {
    this.notice.className = `notice ${kind}`;
    replace(this.notice, text, button('×', { class: 'btn small plain', 'aria-label': 'Dismiss' }, () => replace(this.notice)));
  }

  private async toggle(name: string, enable: boolean, el: HTMLInputElement): Promise<void> {
    el.disabled = true;
    try {
      const p = enable ? await api.plugins.enable(name) : await api.plugins.disable(name);
      this.update(p);
      this.say('ok', `${name} ${enable ? 'enabled' : 'disabled'}.`);
    } catch (e) {
      el.checked = !enable;
      el.disabled = false;
      this.say('error', `Could not ${enable ? 'enable' : 'disable'} ${name}: ${toApiError(e).message}`);
    }
  }

  private async reload(): Promise<void> {
    try {
      const list = await api.plugins.reload();
      this.setAll(list ?? []);
      this.say('ok', 'Plugins reloaded and restarted.');
    } catch (e) {
      this.say('error', `Reload failed: ${toApiError(e).message}`);
    }
  }

  private async open(name: string): Promise<void> {
    try {
      const f = await api.plugins.open(name);
      this.say('ok', f.opened ? `Opened ${f.path}` : `${name} lives in ${f.path}`);
    } catch (e) {
      this.say('error', `Could not open the folder of ${name}: ${toApiError(e).message}`);
    }
  }

  private async remove(name: string): Promise<void> {
    const ok = await confirmModal({
      title: `Remove ${name}?`,
      body: h('p', { 'data-testid': 'confirm-text' }, `The folder of the user plugin ${name} is deleted. Its settings in config.yaml stay.`),
      confirmLabel: 'Remove',
      danger: true,
      confirmTestid: 'confirm-remove',
    });
    if (!ok) return;
    try {
      await api.plugins.remove(name);
      this.say('ok', `${name} removed.`);
      await this.load();
    } catch (e) {
      this.say('error', `Could not remove ${name}: ${toApiError(e).message}`);
    }
  }

  private async browse(zip: boolean): Promise<void> {
    try {
      const p = await api.plugins.browse(zip);
      if (p) {
        this.path.value = p;
        this.path.focus();
      }
    } catch (e) {
      this.installMsg.className = 'install-msg error-text';
      this.installMsg.textContent = toApiError(e).message;
    }
  }

  private async install(): Promise<void> {
    const source = this.path.value.trim();
    if (!source) {
      this.installMsg.className = 'install-msg error-text';
      this.installMsg.textContent = 'Type the path of a plugin folder or .zip first.';
      this.path.focus();
      return;
    }
    this.installBtn.disabled = true;
    this.installMsg.className = 'install-msg muted';
    this.installMsg.textContent = 'Installing…';
    try {
      const p = await api.plugins.install({ source, force: this.force.checked });
      this.installMsg.className = 'install-msg ok-text';
      this.installMsg.textContent = `Installed ${p.name}${p.version ? ` ${p.version}` : ''}. User plugins are off until you enable them.`;
      this.path.value = '';
      await this.load();
    } catch (e) {
      const err = toApiError(e);
      this.installMsg.className = 'install-msg error-text';
      this.installMsg.textContent = `${err.message}${err.code === 'conflict' ? ' — tick "Overwrite existing" to replace it.' : ''}`;
    } finally {
      this.installBtn.disabled = false;
    }
  }
}

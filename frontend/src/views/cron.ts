// Cron: prompts the agent runs on a schedule. Each job with its schedule
// and time zone, its next run, its last run (with a link to that run's
// session) and what became of it; add, pause, resume, run now, remove.

import { api, toApiError } from '../api';
import { button, clear, h, replace } from '../dom';
import { absolute, num, relative } from '../format';
import { confirmModal } from '../modal';
import { showMessage } from '../ops';
import { app, type View } from '../state';
import type { CronDTO, CronJobDTO } from '../types';

export class CronView implements View {
  readonly el: HTMLElement;
  private readonly body: HTMLElement;
  private readonly status: HTMLElement;
  private readonly form: HTMLFormElement;
  private zone = '';

  constructor() {
    this.status = h('div', { class: 'list-status', role: 'status' });
    this.body = h('div', { class: 'storage', 'data-testid': 'cron' });
    this.form = this.addForm();
    this.el = h(
      'section',
      { class: 'view storage-view', 'aria-label': 'Cron' },
      h('div', { class: 'page-head' }, h('h1', {}, 'Cron'), h('span', { class: 'spacer' }), button('Refresh', { class: 'btn small' }, () => void this.load())),
      this.status,
      this.body,
    );
  }

  show(): void {
    void this.load();
  }

  private async load(): Promise<void> {
    replace(this.status, 'Loading…');
    try {
      const c = await api.cron.list();
      clear(this.status);
      this.render(c);
    } catch (e) {
      replace(this.status, `Could not read the jobs: ${toApiError(e).message}`, button('Retry', { class: 'btn small' }, () => void this.load()));
    }
  }

  private render(c: CronDTO): void {
    this.zone = c.timezone;
    (this.form.elements.namedItem('timezone') as HTMLInputElement).placeholder = c.timezone;
    const who = c.running && c.host
      ? h('p', { 'data-testid': 'cron-host' }, h('span', { class: 'badge ok' }, 'scheduler running'), ` in ${c.host.process || 'another process'} (pid ${c.host.pid})`)
      : h('p', { 'data-testid': 'cron-host' }, h('span', { class: 'badge' }, 'scheduler not running'), ' Jobs run while the window, atrium serve or atrium gateway run is open; a run missed meanwhile runs once at the next start.');
    const jobs = c.jobs ?? [];
    const list = jobs.length === 0
      ? h('p', { class: 'muted', 'data-testid': 'cron-empty' }, 'No jobs yet. Add one below.')
      : h(
          'table',
          { class: 'plugins', 'data-testid': 'cron-jobs' },
          h('thead', {}, h('tr', {}, ...['Job', 'Schedule', 'Next run', 'Last run', 'Deliver', ''].map((x) => h('th', {}, x)))),
          h('tbody', {}, ...jobs.map((j) => this.row(j))),
        );
    this.body.replaceChildren(h('section', { class: 'card' }, h('h2', {}, 'Jobs'), who, h('div', { class: 'table-wrap' }, list)), h('section', { class: 'card' }, h('h2', {}, 'Add a job'), this.form));
  }

  private row(j: CronJobDTO): HTMLElement {
    const next = j.paused
      ? h('span', { class: 'badge pending' }, 'paused')
      : j.next_run
        ? h('span', { title: `${absolute(j.next_run)} (${j.timezone})`, 'data-testid': `cron-next-${j.name}` }, relative(j.next_run), h('div', { class: 'muted small' }, zoned(j.next_run, j.timezone)))
        : '–';
    const last = h('td', {});
    if (j.last_run_at) {
      const badge = j.last_status === 'ok' ? 'ok' : j.last_status === 'error' ? 'danger' : 'pending';
      last.append(h('span', { title: absolute(j.last_run_at) }, relative(j.last_run_at)), ' ', h('span', { class: `badge ${badge}` }, j.last_status || '?'));
      if (j.last_session_id) {
        const a = h('a', { href: '#', class: 'chain', 'data-testid': `cron-session-${j.name}`, title: j.last_session_id }, 'open its session');
        a.addEventListener('click', (ev) => {
          ev.preventDefault();
          app.openSession(j.last_session_id);
        });
        last.append(h('div', { class: 'small' }, a));
      }
      if (j.last_error) last.append(h('div', { class: 'small danger-text selectable' }, j.last_error));
    } else {
      last.append(h('span', { class: 'muted' }, 'never'));
    }
    const actions = h(
      'td',
      { class: 'actions' },
      button('Run now', { class: 'btn small', 'data-testid': `cron-run-${j.name}` }, (ev) => void this.run(j, ev.currentTarget as HTMLButtonElement)),
      j.paused
        ? button('Resume', { class: 'btn small', 'data-testid': `cron-resume-${j.name}` }, () => void this.act(() => api.cron.resume(j.name), `Resumed ${j.name}`))
        : button('Pause', { class: 'btn small', 'data-testid': `cron-pause-${j.name}` }, () => void this.act(() => api.cron.pause(j.name), `Paused ${j.name}`)),
      button('Remove', { class: 'btn small danger', 'data-testid': `cron-remove-${j.name}` }, () => void this.remove(j)),
    );
    return h(
      'tr',
      { 'data-testid': `cron-job-${j.name}` },
      h('td', {}, h('strong', {}, j.name), h('div', { class: 'muted small prompt', title: j.prompt }, j.prompt.length > 90 ? `${j.prompt.slice(0, 90)}…` : j.prompt), h('div', { class: 'muted small' }, `${num(j.runs)} run${j.runs === 1 ? '' : 's'}`)),
      h('td', {}, h('code', {}, j.schedule), h('div', { class: 'muted small' }, j.timezone)),
      h('td', {}, next),
      last,
      h('td', {}, j.deliver ? h('code', {}, j.deliver) : h('span', { class: 'muted' }, '–')),
      actions,
    );
  }

  private addForm(): HTMLFormElement {
    const field = (name: string, label: string, attrs: Record<string, string>) =>
      h('label', { class: 'field' }, h('span', {}, label), h('input', { name, class: 'input', ...attrs }));
    const form = h(
      'form',
      { class: 'cron-form', 'data-testid': 'cron-add' },
      field('name', 'Name', { required: 'true', placeholder: 'standup', pattern: '[A-Za-z0-9][A-Za-z0-9._-]{0,63}' }),
      field('schedule', 'Schedule', { required: 'true', placeholder: '0 9 * * 1-5', title: 'minute hour day month weekday, or @daily, @every 2h' }),
      field('timezone', 'Time zone', { placeholder: 'UTC' }),
      field('deliver', 'Deliver to', { placeholder: 'telegram:123456789 (optional)' }),
      h('label', { class: 'field wide' }, h('span', {}, 'Prompt'), h('textarea', { name: 'prompt', class: 'input', rows: '2', required: 'true', placeholder: 'What is on my calendar today?' })),
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'btn small primary', 'data-testid': 'cron-add-submit' }, 'Add job'), h('span', { class: 'muted small' }, 'Five cron fields (minute hour day month weekday); the zone is stored with the job.')),
    );
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      const v = (n: string) => ((form.elements.namedItem(n) as HTMLInputElement | HTMLTextAreaElement).value ?? '').trim();
      void this.act(
        () => api.cron.add({ name: v('name'), schedule: v('schedule'), timezone: v('timezone') || this.zone, prompt: v('prompt'), deliver: v('deliver') }),
        `Added ${v('name')}`,
      ).then((ok) => {
        if (ok) form.reset();
      });
    });
    return form;
  }

  private async act(fn: () => Promise<unknown>, done: string): Promise<boolean> {
    try {
      await fn();
      showMessage('ok', done);
      await this.load();
      return true;
    } catch (e) {
      showMessage('error', 'That did not work', toApiError(e).message);
      return false;
    }
  }

  private async run(j: CronJobDTO, btn: HTMLButtonElement): Promise<void> {
    btn.disabled = true;
    btn.textContent = 'Running…';
    try {
      const r = await api.cron.run(j.name);
      if (r.error) showMessage('error', `${j.name} failed`, r.error);
      else showMessage('ok', `${j.name} ran`, r.reply.length > 200 ? `${r.reply.slice(0, 200)}…` : r.reply);
    } catch (e) {
      showMessage('error', `Could not run ${j.name}`, toApiError(e).message);
    } finally {
      void this.load();
    }
  }

  private async remove(j: CronJobDTO): Promise<void> {
    const ok = await confirmModal({ title: `Remove ${j.name}?`, body: h('p', {}, 'It will not run again. The sessions of its past runs stay.'), confirmLabel: 'Remove', danger: true });
    if (ok) await this.act(() => api.cron.remove(j.name), `Removed ${j.name}`);
  }
}

/** zoned is a time in the job's own zone ("Fri 09:00 Europe/Paris"). */
function zoned(iso: string, zone: string): string {
  try {
    const f = new Intl.DateTimeFormat(undefined, { weekday: 'short', day: 'numeric', month: 'short', hour: '2-digit', minute: '2-digit', timeZone: zone });
    return `${f.format(new Date(iso))} ${zone}`;
  } catch {
    return absolute(iso);
  }
}

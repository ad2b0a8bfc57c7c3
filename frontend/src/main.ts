// Atrium's UI: one page, five views, two transports (see api.ts).

import './style.css';
import { installApprovals } from './approvals';
import { installClarify } from './clarify';
import { api, isDesktop, on, onUnauthorized, startLive, toApiError, type ApiError } from './api';
import { h, replace } from './dom';
import { installKeyboard } from './keyboard';
import { mountOps, showAction } from './ops';
import { Router } from './router';
import { app } from './state';
import { ActivityView } from './views/activity';
import { CronView } from './views/cron';
import { GatewayView } from './views/gateway';
import { PluginsView } from './views/plugins';
import { SessionsView } from './views/sessions';
import { SettingsView } from './views/settings';
import { StorageView } from './views/storage';
import { TranscriptView } from './views/transcript';

function unauthorized(e: ApiError): void {
  const root = document.getElementById('app');
  if (!root || root.dataset.state === 'unauthorized') return;
  root.dataset.state = 'unauthorized';
  replace(
    root,
    h(
      'main',
      { class: 'unauthorized', 'data-testid': 'unauthorized' },
      h('h1', {}, 'This dashboard needs its access link'),
      h('p', {}, 'Open the link that ', h('code', {}, 'atrium serve'), ' printed when it started (it looks like ', h('code', {}, 'http://127.0.0.1:8765/?token=…'), ').'),
      h('p', { class: 'muted' }, 'The token is kept in a cookie for this browser session; a restarted server prints a new one. ', e.message),
    ),
  );
  document.title = 'Atrium · sign-in needed';
}

async function boot(): Promise<void> {
  app.desktop = isDesktop();
  document.documentElement.classList.toggle('desktop', app.desktop);
  onUnauthorized(unauthorized);
  const root = document.getElementById('app')!;
  // The list's first page and count are asked for with the info, and the
  // page is built once they are in: the list is laid out and painted once,
  // with its rows (the window's launch waits for that paint).
  const sessions = new SessionsView();
  const primed = sessions.prime();

  try {
    app.info = await api.settings.info();
  } catch (raw) {
    const e = toApiError(raw);
    if (e.code === 'unauthorized') return;
    // An older server without Info: the UI works, the profile is unknown.
    app.info = { version: '', platform: app.desktop ? 'desktop' : 'dashboard', profile: 'default', home: '' };
  }
  if (root.dataset.state === 'unauthorized') return;
  await primed;

  const transcript = new TranscriptView();
  const router = new Router(
    [
      { name: 'sessions', label: 'Sessions', key: '1', view: sessions },
      { name: 'transcript', view: transcript, under: 'sessions', needsArg: true },
      { name: 'activity', label: 'Activity', key: '2', view: new ActivityView() },
      { name: 'plugins', label: 'Plugins', key: '3', view: new PluginsView() },
      { name: 'gateway', label: 'Gateway', key: '4', view: new GatewayView() },
      { name: 'cron', label: 'Cron', key: '5', view: new CronView() },
      { name: 'storage', label: 'Storage', key: '6', view: new StorageView() },
      { name: 'settings', label: 'Settings', key: '7', view: new SettingsView() },
    ],
    'sessions',
  );
  const brand = h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }, '◆'), 'Atrium', h('span', { class: 'profile-chip', title: app.info.home }, app.info.profile));
  const progress = h('div', { class: 'progress-host', 'aria-live': 'polite' });
  const result = h('div', { class: 'result-host' });
  mountOps(progress, result);
  replace(root, h('header', { class: 'topbar' }, brand, router.nav), router.main, h('footer', { class: 'statusbar' }, progress, result));

  router.onChange((name) => {
    app.current = name;
    if (name === 'sessions') sessions.focusList();
  });
  app.go = (name, arg) => router.go(name, arg);
  app.openSession = (id, at) => {
    transcript.openAt(id, at);
    router.go('transcript', id);
  };
  app.sessionsStale = (facets) => sessions.markStale(facets);

  installKeyboard({
    current: () => router.view(),
    currentName: () => router.current,
    focusSearch: () => {
      if (router.current !== 'sessions') router.go('sessions');
      sessions.focusSearch();
    },
  });
  on('retention:pending', (r) => {
    if (router.current === 'storage') return;
    showAction('warn', 'Automatic pruning is waiting for you', `${r.sessions} ended sessions older than ${r.days} days would go. It runs once you have seen the preview.`, 'Review', () => router.go('storage'));
  });
  installApprovals();
  installClarify();
  on('open-session', (d) => {
    if (d && typeof d.id === 'string' && d.id) app.openSession(d.id);
  });
  startLive();
  router.go('sessions');
}

void boot();

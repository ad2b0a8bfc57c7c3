// Atrium's UI: one page, five views, two transports (see api.ts).

import './style.css';
import { api, isDesktop, on, onUnauthorized, startLive, toApiError, type ApiError } from './api';
import { h, replace } from './dom';
import { installKeyboard } from './keyboard';
import { mountOps } from './ops';
import { app, type View, type ViewName } from './state';
import { ActivityView } from './views/activity';
import { PluginsView } from './views/plugins';
import { SessionsView } from './views/sessions';
import { SettingsView } from './views/settings';
import { TranscriptView } from './views/transcript';

const navItems: { name: ViewName; label: string; key: string }[] = [
  { name: 'sessions', label: 'Sessions', key: '1' },
  { name: 'activity', label: 'Activity', key: '2' },
  { name: 'plugins', label: 'Plugins', key: '3' },
  { name: 'settings', label: 'Settings', key: '4' },
];

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

  try {
    app.info = await api.settings.info();
  } catch (raw) {
    const e = toApiError(raw);
    if (e.code === 'unauthorized') return;
    // An older server without Info: the UI works, the profile is unknown.
    app.info = { version: '', platform: app.desktop ? 'desktop' : 'dashboard', profile: 'default', home: '' };
  }
  if (root.dataset.state === 'unauthorized') return;

  const sessions = new SessionsView();
  const transcript = new TranscriptView();
  const views: Record<ViewName, View> = {
    sessions,
    transcript,
    plugins: new PluginsView(),
    activity: new ActivityView(),
    settings: new SettingsView(),
  };
  const navButtons = new Map<ViewName, HTMLButtonElement>();
  const nav = h('nav', { class: 'nav', 'aria-label': 'Main' });
  for (const it of navItems) {
    const b = h('button', { type: 'button', class: 'nav-btn', 'data-testid': `nav-${it.name}`, title: `${it.label} (Alt+${it.key})` }, it.label);
    b.addEventListener('click', () => go(it.name));
    navButtons.set(it.name, b);
    nav.append(b);
  }
  const brand = h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }, '◆'), 'Atrium', h('span', { class: 'profile-chip', title: app.info.home }, app.info.profile));
  const main = h('main', { class: 'main' });
  for (const v of Object.values(views)) {
    v.el.hidden = true;
    main.append(v.el);
  }
  const progress = h('div', { class: 'progress-host', 'aria-live': 'polite' });
  const result = h('div', { class: 'result-host' });
  mountOps(progress, result);
  replace(root, h('header', { class: 'topbar' }, brand, nav), main, h('footer', { class: 'statusbar' }, progress, result));

  let current: ViewName = 'sessions';
  function go(name: ViewName, arg?: string): void {
    if (name === 'transcript' && !arg) name = 'sessions';
    if (current !== name) {
      views[current].hide?.();
      views[current].el.hidden = true;
    }
    current = name;
    app.current = name;
    views[name].el.hidden = false;
    const navName = name === 'transcript' ? 'sessions' : name;
    for (const [n, b] of navButtons) {
      if (n === navName) b.setAttribute('aria-current', 'page');
      else b.removeAttribute('aria-current');
    }
    views[name].show(arg);
    if (name === 'sessions') sessions.focusList();
  }
  app.go = go;
  app.sessionsStale = () => sessions.markStale();

  installKeyboard({
    current: () => views[current],
    currentName: () => current,
    focusSearch: () => {
      if (current !== 'sessions') go('sessions');
      sessions.focusSearch();
    },
  });
  document.addEventListener('keydown', (ev) => {
    if (!ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const it = navItems.find((n) => n.key === ev.key);
    if (it) {
      ev.preventDefault();
      go(it.name);
    }
  });
  on('open-session', (d) => {
    if (d && typeof d.id === 'string' && d.id) go('transcript', d.id);
  });
  startLive();
  go('sessions');
}

void boot();

// A popup menu (a row's right-click or ⋯ button, the transcript's ⋯):
// arrows move, Enter or a click runs an item, Escape or a click outside
// closes, focus returns to where it was.

import { h } from './dom';

export interface MenuItem {
  label: string;
  /** the key that does the same, shown on the right */
  hint?: string;
  run: () => void;
  danger?: boolean;
  disabled?: boolean;
  testid?: string;
}

export type MenuEntry = MenuItem | 'separator';

let open: { el: HTMLElement; close: () => void } | null = null;

export function menuOpen(): boolean {
  return open !== null;
}

export function closeMenu(): void {
  open?.close();
}

/** openMenu shows entries at a point (a right-click) or under an element. */
export function openMenu(entries: MenuEntry[], at: { x: number; y: number } | HTMLElement, label = 'Actions'): void {
  closeMenu();
  const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const items: HTMLButtonElement[] = [];
  const el = h('div', { class: 'menu', role: 'menu', 'aria-label': label, 'data-testid': 'menu' });
  for (const e of entries) {
    if (e === 'separator') {
      el.append(h('div', { class: 'menu-sep', role: 'separator' }));
      continue;
    }
    const b = h(
      'button',
      { type: 'button', role: 'menuitem', class: `menu-item${e.danger ? ' danger' : ''}`, disabled: e.disabled, 'data-testid': e.testid, tabindex: '-1' },
      h('span', { class: 'menu-label' }, e.label),
      e.hint ? h('kbd', { class: 'menu-hint' }, e.hint) : null,
    );
    b.addEventListener('click', () => {
      close(false);
      e.run();
    });
    items.push(b);
    el.append(b);
  }
  const enabled = () => items.filter((b) => !b.disabled);
  const move = (d: number) => {
    const list = enabled();
    if (list.length === 0) return;
    const i = list.indexOf(document.activeElement as HTMLButtonElement);
    list[(i + d + list.length) % list.length]!.focus();
  };
  el.addEventListener('keydown', (ev) => {
    ev.stopPropagation();
    if (ev.key === 'ArrowDown') move(1);
    else if (ev.key === 'ArrowUp') move(-1);
    else if (ev.key === 'Home') enabled()[0]?.focus();
    else if (ev.key === 'End') enabled().slice(-1)[0]?.focus();
    else if (ev.key === 'Escape' || ev.key === 'Tab') close(true);
    else return;
    ev.preventDefault();
  });
  const outside = (ev: MouseEvent) => {
    if (!el.contains(ev.target as Node)) close(false);
  };
  function close(restore: boolean) {
    if (open?.el !== el) return;
    open = null;
    document.removeEventListener('mousedown', outside, true);
    window.removeEventListener('blur', onBlur);
    el.remove();
    if (restore && before?.isConnected) before.focus();
  }
  const onBlur = () => close(false);
  document.body.append(el);
  // place it inside the window
  let x: number;
  let y: number;
  if (at instanceof HTMLElement) {
    const r = at.getBoundingClientRect();
    x = r.right - el.offsetWidth;
    y = r.bottom + 2;
  } else {
    x = at.x;
    y = at.y;
  }
  x = Math.max(4, Math.min(x, window.innerWidth - el.offsetWidth - 4));
  if (y + el.offsetHeight > window.innerHeight - 4) y = Math.max(4, y - el.offsetHeight - (at instanceof HTMLElement ? at.offsetHeight + 4 : 0));
  el.style.left = `${x}px`;
  el.style.top = `${y}px`;
  document.addEventListener('mousedown', outside, true);
  window.addEventListener('blur', onBlur);
  open = { el, close: () => close(true) };
  enabled()[0]?.focus();
}

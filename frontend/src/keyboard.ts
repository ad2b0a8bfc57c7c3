// Page-wide shortcuts. Precedence of Escape: a menu or a modal, then the
// search box, then the transcript, then the selection (each view's escape()
// decides within its own view). Ctrl+Z and ? work on every page.

import { isTextField } from './dom';
import { showKeySheet } from './keys';
import { closeMenu, menuOpen } from './menu';
import { closeTopModal, modalOpen } from './modal';
import { newSession } from './actions';
import { undoLast } from './ops';
import { app, type View, type ViewName } from './state';

export interface KeyboardHost {
  current(): View;
  currentName(): ViewName;
  focusSearch(): void;
}

export function installKeyboard(host: KeyboardHost): void {
  document.addEventListener('keydown', (ev) => {
    if (ev.defaultPrevented) return;
    if (menuOpen()) {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        closeMenu();
      }
      return;
    }
    if (modalOpen()) {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        closeTopModal();
      }
      return;
    }
    const inField = isTextField(document.activeElement);
    const view = host.current();
    if (ev.key === 'Escape') {
      if (view.escape?.()) ev.preventDefault();
      else if (inField && document.activeElement instanceof HTMLElement) document.activeElement.blur();
      return;
    }
    if (inField) return;
    const mod = ev.ctrlKey || ev.metaKey;
    if (ev.key === '/' && !mod && !ev.altKey) {
      ev.preventDefault();
      host.focusSearch();
      return;
    }
    if (ev.key === '?' && !mod && !ev.altKey) {
      ev.preventDefault();
      showKeySheet();
      return;
    }
    if (mod && !ev.shiftKey && !ev.altKey && (ev.key === 'z' || ev.key === 'Z')) {
      ev.preventDefault();
      void undoLast();
      return;
    }
    if (mod && !ev.shiftKey && !ev.altKey && (ev.key === 'n' || ev.key === 'N')) {
      ev.preventDefault();
      void newSession((id) => app.openSession(id));
      return;
    }
    if (view.key?.(ev)) ev.preventDefault();
  });
}

// Page-wide shortcuts. Precedence of Escape: a modal, then the search box,
// then the transcript, then the selection (each view's escape() decides
// within its own view).

import { isTextField } from './dom';
import { closeTopModal, modalOpen } from './modal';
import type { View, ViewName } from './state';

export interface KeyboardHost {
  current(): View;
  currentName(): ViewName;
  focusSearch(): void;
}

export function installKeyboard(host: KeyboardHost): void {
  document.addEventListener('keydown', (ev) => {
    if (ev.defaultPrevented) return;
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
    if (ev.key === '/' && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
      ev.preventDefault();
      host.focusSearch();
      return;
    }
    if (view.key?.(ev)) ev.preventDefault();
  });
}

// In-page modal dialogs: focus moves in and is kept inside, Escape cancels
// (unless the dialog holds words typed that it would lose),
// Enter presses the default button (unless another button has focus; a
// dangerous confirmation's default is Cancel), focus returns after.

import { button, h } from './dom';

export interface ModalButton<T> {
  label: string;
  value: T;
  kind?: 'primary' | 'danger' | 'plain';
  testid?: string;
  /** the button Enter presses and that has focus first */
  default?: boolean;
}

export interface ModalOptions<T> {
  title: string;
  body: Node;
  buttons: ModalButton<T>[];
  /** what Escape and a click outside give */
  cancelValue: T;
  testid?: string;
  /** a wider dialog, for a form */
  wide?: boolean;
  /** closes the dialog with cancelValue when it aborts (decided elsewhere) */
  signal?: AbortSignal;
  /** asked before Escape or a click outside cancels: false keeps the dialog
   * open (it holds words typed that cancelling would lose) */
  canCancel?: () => boolean;
}

const stack: HTMLElement[] = [];

export function modalOpen(): boolean {
  return stack.length > 0;
}

/** closeTopModal cancels the topmost modal; false if none was open. */
export function closeTopModal(): boolean {
  const top = stack[stack.length - 1];
  if (!top) return false;
  top.dispatchEvent(new CustomEvent('atrium-cancel'));
  return true;
}

function focusables(root: HTMLElement): HTMLElement[] {
  return Array.from(
    root.querySelectorAll<HTMLElement>('button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])'),
  );
}

export function openModal<T>(o: ModalOptions<T>): Promise<T> {
  const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  return new Promise<T>((resolve) => {
    let done = false;
    const titleID = `modal-title-${stack.length}-${Date.now()}`;
    const btns: HTMLButtonElement[] = [];
    const finish = (v: T) => {
      if (done) return;
      done = true;
      document.removeEventListener('focusin', keepFocus, true);
      overlay.remove();
      const i = stack.indexOf(overlay);
      if (i >= 0) stack.splice(i, 1);
      if (before && before.isConnected) before.focus();
      resolve(v);
    };
    for (const b of o.buttons) {
      const el = button(b.label, { class: `btn ${b.kind ?? 'plain'}`, 'data-testid': b.testid }, () => finish(b.value));
      btns.push(el);
    }
    const dialog = h(
      'div',
      { class: o.wide ? 'modal wide' : 'modal', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': titleID, 'data-testid': o.testid },
      h('h2', { id: titleID }, o.title),
      h('div', { class: 'modal-body' }, o.body),
      h('div', { class: 'modal-buttons' }, ...btns),
    );
    const overlay = h('div', { class: 'overlay' }, dialog);
    const cancel = () => {
      if (!o.canCancel || o.canCancel()) finish(o.cancelValue);
    };
    overlay.addEventListener('atrium-cancel', cancel);
    overlay.addEventListener('mousedown', (ev) => {
      if (ev.target === overlay) cancel();
    });
    const defIndex = Math.max(0, o.buttons.findIndex((b) => b.default));
    dialog.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') {
        ev.preventDefault();
        ev.stopPropagation();
        cancel();
      } else if (ev.key === 'Enter' && !(ev.target instanceof HTMLButtonElement) && !(ev.target instanceof HTMLTextAreaElement)) {
        ev.preventDefault();
        ev.stopPropagation();
        btns[defIndex]?.click();
      } else if (ev.key === 'Tab') {
        const f = focusables(dialog);
        if (f.length === 0) return;
        const first = f[0]!;
        const last = f[f.length - 1]!;
        if (ev.shiftKey && document.activeElement === first) {
          ev.preventDefault();
          last.focus();
        } else if (!ev.shiftKey && document.activeElement === last) {
          ev.preventDefault();
          first.focus();
        }
      }
      ev.stopPropagation(); // keys in a modal are not shortcuts of the page
    });
    function keepFocus(ev: FocusEvent) {
      if (stack[stack.length - 1] === overlay && ev.target instanceof Node && !overlay.contains(ev.target)) {
        btns[defIndex]?.focus();
      }
    }
    document.addEventListener('focusin', keepFocus, true);
    if (o.signal?.aborted) {
      finish(o.cancelValue);
      return;
    }
    o.signal?.addEventListener('abort', () => finish(o.cancelValue), { once: true });
    stack.push(overlay);
    document.body.appendChild(overlay);
    btns[defIndex]?.focus();
  });
}

export interface ConfirmOptions {
  title: string;
  body: Node;
  confirmLabel: string;
  danger?: boolean;
  confirmTestid?: string;
  /** Cancel has the focus and Enter cancels: for what cannot be taken back,
   * or is big, the user must pick the action on purpose. A danger
   * confirmation always has it. */
  cancelFocused?: boolean;
  testid?: string;
}

/** confirm asks a yes/no question in a modal. */
export function confirmModal(o: ConfirmOptions): Promise<boolean> {
  const safe = o.cancelFocused ?? !!o.danger;
  return openModal<boolean>({
    title: o.title,
    body: o.body,
    cancelValue: false,
    testid: o.testid ?? 'confirm',
    buttons: [
      { label: 'Cancel', value: false, kind: 'plain', testid: 'confirm-cancel', default: safe },
      { label: o.confirmLabel, value: true, kind: o.danger ? 'danger' : 'primary', testid: o.confirmTestid, default: !safe },
    ],
  });
}

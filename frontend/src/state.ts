// What every view shares: where the UI runs and how to move between views.

import type { InfoDTO } from './types';

export type ViewName = 'sessions' | 'transcript' | 'plugins' | 'activity' | 'settings';

export interface View {
  readonly el: HTMLElement;
  show(arg?: string): void;
  hide?(): void;
  /** Escape with no modal open; true if it did something */
  escape?(): boolean;
  /** a key the page did not handle (focus not in a text field unless stated) */
  key?(ev: KeyboardEvent): boolean;
}

export const app = {
  info: { version: '', platform: '', profile: 'default', home: '' } as InfoDTO,
  desktop: false,
  go: (_view: ViewName, _arg?: string): void => {},
  current: 'sessions' as ViewName,
  /** the sessions list should reload when next shown */
  sessionsStale: (): void => {},
};

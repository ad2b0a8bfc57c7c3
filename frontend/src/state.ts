// What every view shares: where the UI runs and how to move between views.

import type { InfoDTO } from './types';

/** A page's name in the router (src/router.ts): 'sessions', 'transcript', ... */
export type ViewName = string;

export interface View {
  readonly el: HTMLElement;
  show(arg?: string): void;
  hide?(): void;
  /** Escape with no modal open; true if it did something */
  escape?(): boolean;
  /** a key the page did not handle (focus not in a text field unless stated) */
  key?(ev: KeyboardEvent): boolean;
}

/** Where to open a transcript: at a search hit's message, its words marked. */
export interface OpenAt {
  messageID?: number;
  query?: string;
}

export const app = {
  info: { version: '', platform: '', profile: 'default', home: '' } as InfoDTO,
  desktop: false,
  go: (_view: ViewName, _arg?: string): void => {},
  /** openSession shows a session's transcript, at a message if given */
  openSession: (_id: string, _at?: OpenAt): void => {},
  current: 'sessions' as ViewName,
  /** the sessions list should reload when next shown */
  sessionsStale: (_facets?: boolean): void => {},
};

// DTOs of the Go app layer (app/dto.go), as JSON.

export interface SessionDTO {
  id: string;
  source: string;
  title: string;
  profile: string;
  parent_session_id?: string;
  relation?: string;
  started_at: string;
  ended_at?: string;
  end_reason?: string;
  last_activity_at: string;
  archived: boolean;
  archived_at?: string;
  archived_by?: string;
  pinned: boolean;
  message_count: number;
  token_count: number;
}

export interface ListFilter {
  archived: boolean;
  source: string;
  profile: string;
  limit: number;
  cursor: string;
}

export interface PageDTO {
  sessions: SessionDTO[] | null;
  next?: string;
}

export interface HitDTO {
  session: SessionDTO;
  message_id?: number;
  snippet: string;
  in_title: boolean;
}

export interface MessageDTO {
  id: number;
  role: string;
  content: string;
  sent_content: string | null;
  tool_name?: string;
  created_at: string;
  compaction: boolean;
  marker?: 'summary' | 'stub' | string;
}

export interface CompactionDTO {
  event_id: string;
  session_id: string;
  old_session_id: string;
  kind: string;
  reason: string;
  before_tokens: number | null;
  after_tokens: number | null;
  messages_removed: number | null;
  created_at: string;
}

export interface PreviewDTO {
  affected_ids: string[] | null;
  count: number;
  cascaded: number;
}

export interface OutcomeDTO {
  id: string;
  status: string;
  error?: string;
}

export interface ReceiptDTO {
  request_id: string;
  op: string;
  replayed: boolean;
  changed: boolean;
  affected_ids: string[] | null;
  outcomes: OutcomeDTO[] | null;
  created_at: string;
}

export interface TurnDTO {
  session_id: string;
  rotated: boolean;
  command?: string;
  output?: string;
  reply?: string;
  sent_text?: string;
  tool_calls: string[] | null;
  compactions: number;
}

export interface PluginDTO {
  name: string;
  version?: string;
  description?: string;
  runtime: string;
  source: string;
  enabled: boolean;
  state: string;
  error?: string;
  warnings: string[] | null;
  hooks: string[] | null;
  commands: string[] | null;
  /** hooks and commands come from the plugin's last handshake (else its manifest) */
  registered: boolean;
  pid?: number;
  /** the Atrium process running it */
  process?: string;
  restarts?: number;
  dir?: string;
}

export interface InstallRequest {
  source: string;
  force: boolean;
}

export interface DeliveryDTO {
  subscriber: string;
  status: string;
  error?: string;
  redelivery: boolean;
  delivered_at: string;
}

export interface EventDTO {
  seq: number;
  event_id: string;
  hook: string;
  payload: unknown;
  created_at: string;
  delivered: boolean;
  deliveries: DeliveryDTO[] | null;
}

export interface SettingsDTO {
  hook_timeout_seconds: number;
  retention_days: number;
  archive_idle_days: number;
  profile: string;
  profiles?: string[] | null;
}

export interface InfoDTO {
  version: string;
  platform: 'desktop' | 'dashboard' | string;
  profile: string;
  home: string;
}

export interface CountDTO {
  count: number;
}

export interface FacetsDTO {
  sources: string[] | null;
  profiles: string[] | null;
}

export interface FolderDTO {
  path: string;
  opened: boolean;
}

export interface ProgressDTO {
  request_id: string;
  op: string;
  done: number;
  total: number;
}

export interface PluginStateDTO {
  name: string;
  state: string;
  error?: string;
}

export interface OpenSessionDTO {
  id: string;
}

export type BulkOp = 'delete' | 'archive' | 'unarchive';

/** The live events both transports deliver. */
export interface LiveEvents {
  activity: EventDTO[];
  progress: ProgressDTO;
  'plugin-state': PluginStateDTO;
  'open-session': OpenSessionDTO;
}

// The DTOs of the Go app layer, generated from app/*.go (see frontend/tsgen),
// and the few types the UI adds.

export type * from './api/gen/dto';
export type { LiveEvents } from './consts/events';
export type { BulkOp } from './api';

/**
 * The PostgreSQL store's tables (migration 1). Every name starts with `chorus_`, so Chorus can
 * share a database with other software without a clash.
 *
 * - `chorus_records` is the log: one row per record, inserted and never updated or deleted. It is
 *   the truth, like the files of the file store.
 * - `chorus_entries` indexes the transcript entries those records carry, so a page of history is one
 *   index range scan; its `delivery` / `posted_ids` hold the latest delivery outcome (the records keep
 *   every outcome in order, this is only the shortcut for reading). Later migrations add `edit`
 *   (the latest edit, 5) and `copies` (the latest outcome of each copy in a room's other chats, 7).
 * - `chorus_checkpoints` is the shortcut for loading a group: its state after record `n`.
 * - `chorus_groups` lists every group ever written (the log rows alone would need a scan to list).
 * - `chorus_probe` takes the small durable write of `checkWritable`.
 */
export const STORE_SQL = `
CREATE TABLE chorus_groups (
  id text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE chorus_records (
  group_id text NOT NULL,
  n bigint NOT NULL,
  v smallint NOT NULL,
  ts bigint NOT NULL,
  body json NOT NULL,
  PRIMARY KEY (group_id, n)
);

CREATE TABLE chorus_entries (
  group_id text NOT NULL,
  seq bigint NOT NULL,
  n bigint NOT NULL,
  entry json NOT NULL,
  delivery text,
  posted_ids json,
  PRIMARY KEY (group_id, seq)
);

CREATE TABLE chorus_checkpoints (
  group_id text PRIMARY KEY,
  n bigint NOT NULL,
  version integer NOT NULL,
  body json NOT NULL,
  written_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE chorus_probe (
  instance text PRIMARY KEY,
  at timestamptz NOT NULL
);
`;

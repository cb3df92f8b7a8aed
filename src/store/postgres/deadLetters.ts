/**
 * Dead letters of the PostgreSQL store: the table `chorus_dead_letters` (migration 3), shared by
 * every instance on the database. One row per item, keyed by where it came from and its platform
 * id, so an item offered again (a confirmation lost on the way back) is kept once.
 */
import type pg from 'pg';
import type { DeadLetter, DeadLetters } from '../../core/ports.js';

export const DEAD_LETTERS_SQL = `
CREATE TABLE chorus_dead_letters (
  channel text NOT NULL,
  part text NOT NULL,
  item_id text NOT NULL,
  reason text NOT NULL,
  raw json NOT NULL,
  kept_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (channel, part, item_id)
);
`;

export class PgDeadLetters implements DeadLetters {
  constructor(private readonly pool: pg.Pool) {}

  async keep(letter: DeadLetter): Promise<string> {
    await this.pool.query(
      'INSERT INTO chorus_dead_letters (channel, part, item_id, reason, raw) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (channel, part, item_id) DO NOTHING',
      [letter.channel, letter.part, letter.id, letter.reason, JSON.stringify(letter.raw)],
    );
    return 'table chorus_dead_letters';
  }
}

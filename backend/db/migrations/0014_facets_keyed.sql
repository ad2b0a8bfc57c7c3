-- session_facets' delete trigger decremented its three rows with one
-- statement, (facet, value) IN (VALUES ...): SQLite builds that list as an
-- ephemeral table, with its own page cache, at every deleted session, and
-- scans the table for it. Three statements, each one primary-key lookup,
-- cost a bulk delete ~2 µs less per session (BenchmarkSweepEmpty500's
-- deletes of 500: ~1.1 ms, change 53 in docs/benchmarks.md). No row
-- ('platform', '') is ever written, so its statement finds nothing for a
-- session without a platform. The relabelling trigger takes the same shape.
DROP TRIGGER session_facets_ad;
CREATE TRIGGER session_facets_ad AFTER DELETE ON sessions BEGIN
  UPDATE session_facets SET n = n - 1 WHERE facet = 'source' AND value = old.source;
  UPDATE session_facets SET n = n - 1 WHERE facet = 'profile' AND value = old.profile;
  UPDATE session_facets SET n = n - 1 WHERE facet = 'platform' AND value = old.platform;
END;
DROP TRIGGER session_facets_au;
CREATE TRIGGER session_facets_au AFTER UPDATE OF source, profile, platform ON sessions
WHEN old.source <> new.source OR old.profile <> new.profile OR old.platform <> new.platform BEGIN
  UPDATE session_facets SET n = n - 1 WHERE facet = 'source' AND value = old.source;
  UPDATE session_facets SET n = n - 1 WHERE facet = 'profile' AND value = old.profile;
  UPDATE session_facets SET n = n - 1 WHERE facet = 'platform' AND value = old.platform;
  INSERT INTO session_facets (facet, value, n)
    SELECT 'source', new.source, 1 UNION ALL SELECT 'profile', new.profile, 1
    UNION ALL SELECT 'platform', new.platform, 1 WHERE new.platform <> ''
    ON CONFLICT (facet, value) DO UPDATE SET n = n + 1;
END;

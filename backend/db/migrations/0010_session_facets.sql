-- The window's filter menus (Facets: the sources, profiles and platforms in
-- use) read every session three times: 3 ms at 10,000 sessions, ~30 ms at
-- 100,000, at launch and after every bulk action. One row per value in use,
-- with how many sessions have it, kept by triggers on every path that adds,
-- removes or relabels a session (three indexes would cost every delete
-- three more pages; this small table costs it one). A value no session has
-- any more keeps its row at n = 0 (rows are few: one per value ever used),
-- so a delete runs one statement, not two.
CREATE TABLE session_facets (
  facet TEXT    NOT NULL CHECK (facet IN ('source', 'profile', 'platform')),
  value TEXT    NOT NULL,
  n     INTEGER NOT NULL,
  PRIMARY KEY (facet, value)
) WITHOUT ROWID;
INSERT INTO session_facets (facet, value, n)
  SELECT 'source', source, count(*) FROM sessions GROUP BY source
  UNION ALL SELECT 'profile', profile, count(*) FROM sessions GROUP BY profile
  UNION ALL SELECT 'platform', platform, count(*) FROM sessions WHERE platform <> '' GROUP BY platform;
CREATE TRIGGER session_facets_ai AFTER INSERT ON sessions BEGIN
  INSERT INTO session_facets (facet, value, n)
    SELECT 'source', new.source, 1 UNION ALL SELECT 'profile', new.profile, 1
    UNION ALL SELECT 'platform', new.platform, 1 WHERE new.platform <> ''
    ON CONFLICT (facet, value) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER session_facets_ad AFTER DELETE ON sessions BEGIN
  UPDATE session_facets SET n = n - 1
  WHERE (facet, value) IN (VALUES ('source', old.source), ('profile', old.profile), ('platform', old.platform));
END;
CREATE TRIGGER session_facets_au AFTER UPDATE OF source, profile, platform ON sessions
WHEN old.source <> new.source OR old.profile <> new.profile OR old.platform <> new.platform BEGIN
  UPDATE session_facets SET n = n - 1
  WHERE (facet, value) IN (VALUES ('source', old.source), ('profile', old.profile), ('platform', old.platform));
  INSERT INTO session_facets (facet, value, n)
    SELECT 'source', new.source, 1 UNION ALL SELECT 'profile', new.profile, 1
    UNION ALL SELECT 'platform', new.platform, 1 WHERE new.platform <> ''
    ON CONFLICT (facet, value) DO UPDATE SET n = n + 1;
END;

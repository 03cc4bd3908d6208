-- The state's generation: one number that every write of the state moves
-- on (SQLite). A watcher keeps the state it read and wrote between its
-- scans, and reads it again only when the generation is no longer the one
-- its own last write left: another process (a cron run, `retry`,
-- `forget`, a second deployment on the same file) wrote since.

-- +goose Up
CREATE TABLE generation (
    n BIGINT NOT NULL
);
INSERT INTO generation (n) VALUES (0);

-- +goose Down
DROP TABLE generation;

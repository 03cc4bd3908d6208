-- The fleet: what deployments sharing one store coordinate through.
-- Portable SQL (SQLite and PostgreSQL); times are BIGINT unix ms UTC.

-- +goose Up

-- One row per fingerprint some deployment is diagnosing or filing. The
-- primary key makes a claim exclusive fleet-wide: one agent run and one
-- create per defect. A holder that dies stops renewing; once expires_ms
-- has passed another deployment may take the claim over.
CREATE TABLE claims (
    fingerprint TEXT PRIMARY KEY,
    holder      TEXT NOT NULL,   -- deployment id, pid and a random token
    deployment  TEXT NOT NULL,
    claimed_ms  BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL
);

-- One row per fleet-wide budget. A reserver locks its budget's row
-- (SELECT ... FOR UPDATE on PostgreSQL; SQLite's write transaction locks
-- the file) before counting, so concurrent reservers are serialised and
-- the count they see is the count they extend.
CREATE TABLE budgets (
    name TEXT PRIMARY KEY
);
INSERT INTO budgets (name) VALUES ('issues'), ('diagnoses'), ('cost');

-- What each budget has spent: one row per issue created (or about to be),
-- agent run, or agent cost (amount in micro-dollars; 1 for the others).
-- A budget's use is the sum of amount over its window (the last 24 h).
CREATE TABLE reservations (
    id          TEXT PRIMARY KEY,
    budget      TEXT NOT NULL REFERENCES budgets (name),
    fingerprint TEXT NOT NULL,
    holder      TEXT NOT NULL,
    deployment  TEXT NOT NULL,
    at_ms       BIGINT NOT NULL,
    amount      BIGINT NOT NULL
);
CREATE INDEX reservations_window ON reservations (budget, at_ms);
CREATE INDEX reservations_fingerprint ON reservations (fingerprint, budget);

-- +goose Down
DROP TABLE reservations;
DROP TABLE budgets;
DROP TABLE claims;

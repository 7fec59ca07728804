-- External tasks, signals by key, business keys and tags (schema version 20).
--
-- An external task is a child of a step instance whose handler lives outside Coop. Its place in the barrier is a run
-- row like any child's (saga '~external-task', which no saga can be named, status WAITING and never claimed): the
-- parent counts it in pending_children, reads its result and failure like a child's, and settles it when it gives up.
-- This table addresses it: by an opaque token, by an optional correlation key unique among open tasks, and says what
-- its rollback launches.
CREATE TABLE {schema}.external_task (
    run_id               uuid PRIMARY KEY,
    message_id           uuid NOT NULL,
    parent_id            uuid NOT NULL,
    parent_seq           int NOT NULL,
    root_id              uuid NOT NULL,
    name                 text NOT NULL,
    token                text NOT NULL,
    task_key             text,
    state                text NOT NULL DEFAULT 'OPEN',
    compensation_topic   text,
    compensation_payload text,
    deadline_at          timestamptz,
    timeout_at           timestamptz,
    created_at           timestamptz NOT NULL,
    settled_at           timestamptz,
    settled_by           text
);
CREATE UNIQUE INDEX external_task_token ON {schema}.external_task (token);
CREATE UNIQUE INDEX external_task_open_key ON {schema}.external_task (task_key) WHERE state = 'OPEN';
CREATE INDEX external_task_key ON {schema}.external_task (task_key, created_at) WHERE task_key IS NOT NULL;
CREATE INDEX external_task_open ON {schema}.external_task (name, created_at) WHERE state = 'OPEN';
CREATE INDEX external_task_parent ON {schema}.external_task (parent_id, parent_seq);
CREATE INDEX external_task_root ON {schema}.external_task (root_id);

-- Signals sent to a key no open task holds yet: kept until a step waiting for the key takes the oldest, or until
-- expires_at.
CREATE TABLE {schema}.signal (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    signal_key text NOT NULL,
    payload    text,
    sent_by    text,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX signal_by_key ON {schema}.signal (signal_key, id);
CREATE INDEX signal_expiry ON {schema}.signal (expires_at);

-- Business keys and tags of launches: found by index, never by scanning the log.
ALTER TABLE {schema}.message ADD COLUMN business_key text, ADD COLUMN tags text[];
CREATE INDEX message_business_key ON {schema}.message (business_key, created_at) WHERE business_key IS NOT NULL;
CREATE INDEX message_tags ON {schema}.message USING gin (tags) WHERE tags IS NOT NULL;

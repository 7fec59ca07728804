CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, item text NOT NULL, amount_cents bigint NOT NULL,
                                   status text NOT NULL);
CREATE TABLE IF NOT EXISTS payments (order_id text NOT NULL, amount_cents bigint NOT NULL);

-- Start of the current login-failure window per operator: the first failure in a window notifies,
-- later ones are only recorded. Kept here (not in memory) so every auth replica shares one window.
CREATE TABLE login_failure_windows (
  operator_id text PRIMARY KEY REFERENCES operators (id) ON DELETE CASCADE,
  window_start bigint NOT NULL
);

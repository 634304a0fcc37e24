-- Scoped operator access: an agent selector (assignment grammar) limiting the agents an operator
-- can reach. NULL = unscoped; admins are always unscoped (enforced by the service).
ALTER TABLE operators ADD COLUMN agent_selector text;

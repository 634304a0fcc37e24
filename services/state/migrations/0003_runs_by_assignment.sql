-- ListAssignmentRuns pages one assignment's runs newest first.
CREATE INDEX runs_by_assignment ON runs (assignment, id DESC);

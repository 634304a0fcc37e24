-- A plain sha256 of a file rendered with a secret is an offline guessing oracle, and
-- believed state recorded before hashes were withheld cannot tell which files were rendered with
-- one. Drop every recorded file hash; the next apply of each module records them again, for files
-- without secrets only.
UPDATE believed SET observed = observed - 'sha256' WHERE observed ? 'sha256';

-- Module bundles (docs/modules.md, "Bundles"): the files a bundle shipped, as a sorted JSON list of
-- {path, digest, size}. Each file's bytes are a blob; the module keeps only the manifest, and the
-- version hash covers it, so a bundle whose files change is a new version even if module.yaml is not.
ALTER TABLE modules ADD COLUMN files jsonb;
ALTER TABLE module_versions ADD COLUMN files jsonb;

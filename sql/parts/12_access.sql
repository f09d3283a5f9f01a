-- ---------------------------------------------------------------------------
-- 12_access.sql: who may predict with a model (code: src/pg/base/access.c;
-- docs/security.md).  The model's owner role (and its members) may do
-- everything with it; other roles predict only when granted here, and also
-- need SELECT on the task's anchor table.  grantee 0 = PUBLIC.
-- ---------------------------------------------------------------------------
CREATE TABLE headwater.model_grant (
	model_id int NOT NULL REFERENCES headwater.model ON DELETE CASCADE,
	grantee  oid NOT NULL,
	PRIMARY KEY (model_id, grantee)
);
REVOKE ALL ON headwater.model_grant FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('headwater.model_grant', '');

CREATE FUNCTION rt_grant_predict(model text, role text)
RETURNS void AS 'MODULE_PATHNAME', 'rt_grant_predict' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_grant_predict(text, text) IS
	'let a role (and its members; ''public'': every role) predict with a model; model owner only';

CREATE FUNCTION rt_revoke_predict(model text, role text)
RETURNS void AS 'MODULE_PATHNAME', 'rt_revoke_predict' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION rt_revoke_predict(text, text) IS 'take back a prediction grant; model owner only';

CREATE FUNCTION rt_grants(model text)
RETURNS TABLE (role text, privilege text)
AS 'MODULE_PATHNAME', 'rt_grants' LANGUAGE C STABLE;
COMMENT ON FUNCTION rt_grants(text) IS 'the roles granted prediction on a model; model owner only';

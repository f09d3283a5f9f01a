src/pg/base/type_input.o: src/pg/base/type_input.c \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/postgres.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/c.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/postgres_ext.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config_ext.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config_manual.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config_os.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/elog.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/errcodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/palloc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h \
 src/pg/base/hw_pg.h src/core/snapshot.h src/core/hw_common.h \
 src/pg/base/pg_errors.h src/pg/base/pg_model_lookup.h \
 src/pg/base/pg_owner.h src/pg/base/pg_xact.h
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/postgres.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/c.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/postgres_ext.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config_ext.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config_manual.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pg_config_os.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/elog.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/errcodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/palloc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h:
src/pg/base/hw_pg.h:
src/core/snapshot.h:
src/core/hw_common.h:
src/pg/base/pg_errors.h:
src/pg/base/pg_model_lookup.h:
src/pg/base/pg_owner.h:
src/pg/base/pg_xact.h:

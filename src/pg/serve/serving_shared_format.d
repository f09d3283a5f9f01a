src/pg/serve/serving_shared_format.o: \
 src/pg/serve/serving_shared_format.c \
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
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/miscadmin.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h \
 src/pg/serve/hw_serving_shared.h src/core/model.h src/core/hw_common.h \
 src/core/batch.h src/core/backend.h src/core/attention.h \
 src/core/snapshot.h src/pg/serve/serving_shared_format.h
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
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/miscadmin.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h:
src/pg/serve/hw_serving_shared.h:
src/core/model.h:
src/core/hw_common.h:
src/core/batch.h:
src/core/backend.h:
src/core/attention.h:
src/core/snapshot.h:
src/pg/serve/serving_shared_format.h:

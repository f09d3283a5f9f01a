src/pg/base/pg_errors.o: src/pg/base/pg_errors.c \
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
 src/pg/base/pg_errors.h src/core/hw_common.h
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
src/pg/base/pg_errors.h:
src/core/hw_common.h:

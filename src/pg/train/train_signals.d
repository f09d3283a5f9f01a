src/pg/train/train_signals.o: src/pg/train/train_signals.c \
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
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/latch.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/spin.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/s_lock.h \
 src/pg/train/hw_train.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm_impl.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/jsonb.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/numeric.h \
 src/core/model.h src/core/hw_common.h src/core/batch.h \
 src/core/backend.h src/core/attention.h src/core/sampler.h \
 src/core/snapshot.h src/core/task.h src/core/settings.h \
 src/pg/train/train_signals.h
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
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/latch.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/spin.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/s_lock.h:
src/pg/train/hw_train.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm_impl.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/jsonb.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/numeric.h:
src/core/model.h:
src/core/hw_common.h:
src/core/batch.h:
src/core/backend.h:
src/core/attention.h:
src/core/sampler.h:
src/core/snapshot.h:
src/core/task.h:
src/core/settings.h:
src/pg/train/train_signals.h:

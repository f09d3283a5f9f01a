src/pg/base/settings_json.o: src/pg/base/settings_json.c \
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
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/funcapi.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attnum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/genbki.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/pg_list.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/nodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/executor.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/execdesc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/execnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupconvert.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attmap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemptr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/block.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/off.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemid.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup_details.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/transam.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupmacs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/int.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/bufpage.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/item.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sysattr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/buf.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/bitmapset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/instrument.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/portability/instr_time.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/ilist.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/pairingheap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/params.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/plannodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sdir.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/stratnum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/lockoptions.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/parsenodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/primnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/value.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/partitioning/partdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/tidbitmap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/dsa.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm_impl.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/condition_variable.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/proclist_types.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/spin.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/s_lock.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/hsearch.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/queryenvironment.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/reltrigger.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sharedtuplestore.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fd.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/sharedfileset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fileset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/snapshot.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sortsupport.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/relcache.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplesort.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/itup.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplestore.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/simplehash.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_bitutils.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/dest.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtag.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtaglist.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/memutils.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/memnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/mb/pg_wchar.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/builtins.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/fmgrprotos.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/jsonb.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/numeric.h \
 src/pg/base/hw_settings_pg.h src/core/settings.h src/core/hw_common.h \
 src/core/model.h src/core/batch.h src/core/backend.h \
 src/core/attention.h src/core/sampler.h src/core/snapshot.h \
 src/core/task.h
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
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/funcapi.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attnum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/genbki.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/pg_list.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/nodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/executor.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/execdesc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/execnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupconvert.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attmap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemptr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/block.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/off.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemid.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup_details.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/transam.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupmacs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/int.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/bufpage.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/item.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sysattr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/buf.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/bitmapset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/instrument.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/portability/instr_time.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/ilist.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/pairingheap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/params.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/plannodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sdir.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/stratnum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/lockoptions.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/parsenodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/primnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/value.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/partitioning/partdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/tidbitmap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/dsa.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm_impl.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/condition_variable.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/proclist_types.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/spin.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/s_lock.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/hsearch.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/queryenvironment.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/reltrigger.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sharedtuplestore.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fd.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/sharedfileset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fileset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/snapshot.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sortsupport.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/relcache.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplesort.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/itup.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplestore.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/simplehash.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_bitutils.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/dest.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtag.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtaglist.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/memutils.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/memnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/mb/pg_wchar.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/builtins.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/fmgrprotos.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/jsonb.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/numeric.h:
src/pg/base/hw_settings_pg.h:
src/core/settings.h:
src/core/hw_common.h:
src/core/model.h:
src/core/batch.h:
src/core/backend.h:
src/core/attention.h:
src/core/sampler.h:
src/core/snapshot.h:
src/core/task.h:

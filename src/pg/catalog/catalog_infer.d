src/pg/catalog/catalog_infer.o: src/pg/catalog/catalog_infer.c \
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
 src/pg/catalog/catalog_build_priv.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup_details.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemptr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/block.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/off.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemid.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/transam.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attnum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/genbki.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/pg_list.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/nodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupmacs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/int.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/bufpage.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/item.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/objectaddress.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/parsenodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/bitmapset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/lockoptions.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/primnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/value.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/partitioning/partdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lockdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/relcache.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/spi.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/commands/trigger.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tableam.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/relscan.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/itup.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/buf.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/spin.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/s_lock.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sdir.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xact.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogreader.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogrecord.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/rmgr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/rmgrlist.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_crc32c.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_bswap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/relfilenode.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/relpath.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/catversion.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/backendid.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/sinval.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/guc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/dest.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sysattr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtag.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtaglist.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/rel.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlog.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_class.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_class_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_index.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_index_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_publication.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_publication_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/rewrite/prs2lock.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/smgr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/ilist.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/reltrigger.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/snapshot.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/pairingheap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/execnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupconvert.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attmap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/instrument.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/portability/instr_time.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/params.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/plannodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/stratnum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/tidbitmap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/dsa.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm_impl.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/condition_variable.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/proclist_types.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/hsearch.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/queryenvironment.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sharedtuplestore.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fd.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/sharedfileset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fileset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sortsupport.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplesort.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplestore.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/simplehash.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_bitutils.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/parser/parser.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/portal.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/execdesc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/plancache.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/resowner.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/miscadmin.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/builtins.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/fmgrprotos.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/lsyscache.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/memutils.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/memnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h \
 src/pg/base/hw_pg.h src/core/snapshot.h src/core/hw_common.h \
 src/pg/base/pg_errors.h src/pg/base/pg_model_lookup.h \
 src/pg/base/pg_owner.h src/pg/base/pg_xact.h \
 src/pg/catalog/catalog_priv.h src/pg/catalog/catalog_build.h \
 src/core/embed_hash.h src/core/name_rules.h src/core/snapshot_build.h \
 src/core/snapshot_keys.h src/core/snapshot_strmap.h
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
src/pg/catalog/catalog_build_priv.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup_details.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemptr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/block.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/off.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemid.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/transam.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attnum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/genbki.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/pg_list.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/nodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupmacs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/int.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/bufpage.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/item.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/objectaddress.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/parsenodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/bitmapset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/lockoptions.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/primnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/value.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/partitioning/partdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lockdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/relcache.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/spi.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/commands/trigger.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tableam.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/relscan.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/itup.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/buf.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/spin.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/s_lock.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sdir.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xact.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogreader.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogrecord.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/rmgr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/rmgrlist.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_crc32c.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_bswap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/relfilenode.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/relpath.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/catversion.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/backendid.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/sinval.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/guc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/dest.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sysattr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtag.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtaglist.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/rel.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlog.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_class.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_class_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_index.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_index_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_publication.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_publication_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/rewrite/prs2lock.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/smgr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/ilist.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/reltrigger.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/snapshot.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/pairingheap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/execnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupconvert.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attmap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/instrument.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/portability/instr_time.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/params.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/plannodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/stratnum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/tidbitmap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/dsa.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/dsm_impl.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/condition_variable.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/proclist_types.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/hsearch.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/queryenvironment.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sharedtuplestore.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fd.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/sharedfileset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/fileset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/sortsupport.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplesort.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/tuplestore.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/simplehash.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/pg_bitutils.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/parser/parser.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/portal.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/execdesc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/plancache.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/resowner.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/miscadmin.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/builtins.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/fmgrprotos.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/lsyscache.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/memutils.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/memnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h:
src/pg/base/hw_pg.h:
src/core/snapshot.h:
src/core/hw_common.h:
src/pg/base/pg_errors.h:
src/pg/base/pg_model_lookup.h:
src/pg/base/pg_owner.h:
src/pg/base/pg_xact.h:
src/pg/catalog/catalog_priv.h:
src/pg/catalog/catalog_build.h:
src/core/embed_hash.h:
src/core/name_rules.h:
src/core/snapshot_build.h:
src/core/snapshot_keys.h:
src/core/snapshot_strmap.h:

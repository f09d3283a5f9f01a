src/pg/base/pg_owner.o: src/pg/base/pg_owner.c \
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
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/namespace.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/primnodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attnum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/bitmapset.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/pg_list.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/nodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lock.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/backendid.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lockdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lwlock.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/proclist_types.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lwlocknames.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/shmem.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/hsearch.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_namespace.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/genbki.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_namespace_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/acl.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemptr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/block.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/off.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemid.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/parsenodes.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/lockoptions.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/value.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/partitioning/partdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/parser/parse_node.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/queryenvironment.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogdefs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/relcache.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/snapshot.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/pairingheap.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/buf.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/miscadmin.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/guc.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/dest.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup_details.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/transam.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupmacs.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type_d.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/int.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/bufpage.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/item.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sysattr.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtag.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtaglist.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h \
 /tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/syscache.h \
 src/pg/base/pg_owner.h
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
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/namespace.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/primnodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/attnum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/bitmapset.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/pg_list.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/nodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lock.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/backendid.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lockdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lwlock.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/arch-x86.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic-gcc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/fallback.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/port/atomics/generic.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/proclist_types.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/lwlocknames.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/shmem.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/hsearch.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/fmgr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_namespace.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/genbki.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_namespace_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/acl.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemptr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/block.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/off.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/itemid.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/parsenodes.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/lockoptions.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/nodes/value.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/partitioning/partdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/parser/parse_node.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/queryenvironment.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupdesc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/xlogdefs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_attribute_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/relcache.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/snapshot.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/pairingheap.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/lib/stringinfo.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/buf.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/miscadmin.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/datatype/timestamp.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/pgtime.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/guc.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/dest.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/executor/tuptable.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/htup_details.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/transam.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/tupmacs.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/catalog/pg_type_d.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/common/int.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/bufpage.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/storage/item.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/access/sysattr.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtag.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/tcop/cmdtaglist.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/array.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/expandeddatum.h:
/tmp/hwdev/pg-main/usr/include/postgresql/15/server/utils/syscache.h:
src/pg/base/pg_owner.h:

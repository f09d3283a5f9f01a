# headwater: PGXS build.
#
#   make                 build headwater.so (and headwater_cuda.so when nvcc is found)
#   make install         install into the PostgreSQL found by $(PG_CONFIG)
#   make unit            build and run the C unit tests of src/core + src/backend
#   make bench           build the benchmarks under bench/
#   USE_CUDA=auto|0|1    CUDA backend: auto = when nvcc is found (default)
#   CUDA_ARCHS="90"      SM architectures for cuda/ (PTX of the last is embedded too)

EXTENSION   = headwater
MODULE_big  = headwater
DATA_built  = sql/headwater--0.1.0.sql
PG_CONFIG  ?= pg_config

CORE_SRCS    = $(sort $(wildcard src/core/*.c))
BACKEND_SRCS = $(sort $(wildcard src/backend/*.c))
PGLAYER_SRCS = $(sort $(wildcard src/pg/*.c src/pg/*/*.c))
OBJS = $(CORE_SRCS:.c=.o) $(BACKEND_SRCS:.c=.o) $(PGLAYER_SRCS:.c=.o)

# pg_regress suites: inputs in sql/, outputs in expected/ (contrib convention)
REGRESS      = $(basename $(notdir $(sort $(wildcard sql/t_*.sql))))
REGRESS_OPTS = --inputdir=. --outputdir=. --dbname=headwater_regress

WARN        = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
              -Wno-declaration-after-statement -Wno-sign-compare
# OpenBLAS's own cblas.h: libblas-dev (reference BLAS) also ships one in the
# default include path, and backend_cpu.c refuses to build against it.
OPENBLAS_INC ?= $(firstword $(wildcard /usr/include/*/openblas-pthread /usr/include/*/openblas-openmp /usr/include/openblas))
# -MMD -MP: header dependencies in src/*/*.d (included below), so a changed
# struct in a header rebuilds every object that uses it
PG_CFLAGS   = -MMD -MP -std=gnu11 -fopenmp -O2 $(WARN) $(if $(OPENBLAS_INC),-I$(OPENBLAS_INC)) -Isrc
SHLIB_LINK  = -fopenmp -lopenblas -lm -ldl -lpthread

# ---- CUDA backend: a separate library, dlopen'ed by the training worker only.
USE_CUDA   ?= auto
NVCC       ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCHS ?= 90
ifeq ($(USE_CUDA),auto)
  BUILD_CUDA := $(if $(NVCC),1,0)
else
  BUILD_CUDA := $(USE_CUDA)
endif

CUDA_SRCS = $(sort $(wildcard cuda/*.cu))
CUDA_OBJS = $(CUDA_SRCS:.cu=.o)
NVCC_GENCODE = $(foreach a,$(CUDA_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
               -gencode arch=compute_$(lastword $(CUDA_ARCHS)),code=compute_$(lastword $(CUDA_ARCHS))
NVCC_FLAGS = -O3 -std=c++17 -Xcompiler -fPIC -Xcompiler -Wall -Isrc $(NVCC_GENCODE)

# no LLVM bitcode: the core is plain C with OpenMP and is not JIT-inlined
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
-include $(OBJS:.o=.d)

ifeq ($(BUILD_CUDA),1)
all: headwater_cuda$(DLSUFFIX)
install: install-cuda
endif


# The install script is assembled from one part per concern (sql/parts/NN_*.sql).
sql/headwater--0.1.0.sql: $(sort $(wildcard sql/parts/*.sql))
	cat $^ > $@

cuda/%.o: cuda/%.cu $(wildcard cuda/*.h) $(wildcard src/backend/*.h) $(wildcard src/core/*.h)
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

headwater_cuda$(DLSUFFIX): $(CUDA_OBJS)
	$(NVCC) -shared $(NVCC_GENCODE) -o $@ $^ -L$(CUDA_HOME)/lib64 -lcublas -lcublasLt -lcudart \
	  $(if $(wildcard $(CUDA_HOME)/lib64/libnccl*),-lnccl,) -Xlinker -rpath=$(CUDA_HOME)/lib64

install-cuda: headwater_cuda$(DLSUFFIX)
	$(INSTALL_SHLIB) headwater_cuda$(DLSUFFIX) '$(DESTDIR)$(pkglibdir)/headwater_cuda$(DLSUFFIX)'

EXTRA_CLEAN = $(OBJS:.o=.d) headwater_cuda$(DLSUFFIX) $(CUDA_OBJS) test/unit/run_unit bench/bin \
              test/unit/*.o

# ---- unit tests and benchmarks: src/core + src/backend without the server
# Test fixtures (synthetic batches) are linked into the unit tests and the
# benchmarks, never into headwater.so.
HOST_CFLAGS = -std=gnu11 -O2 -g -fopenmp $(WARN) $(if $(OPENBLAS_INC),-I$(OPENBLAS_INC)) -Isrc -Itest/unit -Itest/fixtures
HOST_LIBS   = -fopenmp -lopenblas -lm -lpthread -ldl
UNIT_SRCS   = $(sort $(wildcard test/unit/*.c))
FIXTURE_SRCS = $(sort $(wildcard test/fixtures/*.c))
FIXTURE_HDRS = $(wildcard test/fixtures/*.h)

test/unit/run_unit: $(UNIT_SRCS) $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(wildcard src/core/*.h src/backend/*.h test/unit/*.h) $(FIXTURE_HDRS)
	$(CC) $(HOST_CFLAGS) -o $@ $(UNIT_SRCS) $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(HOST_LIBS)

unit: test/unit/run_unit
	test/unit/run_unit

BENCH_SRCS = $(sort $(wildcard bench/*.c))
BENCH_BINS = $(patsubst bench/%.c,bench/bin/%,$(BENCH_SRCS))
bench/bin/%: bench/%.c $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(wildcard src/core/*.h src/backend/*.h) $(FIXTURE_HDRS)
	@mkdir -p bench/bin
	$(CC) $(HOST_CFLAGS) -O3 -o $@ $< $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(HOST_LIBS)
bench: $(BENCH_BINS)

.PHONY: unit bench install-cuda

# ---- CUDA backend: GPU test and benchmark (link headwater_cuda.so directly).
# Both build wherever nvcc exists; without a GPU the test prints a loud SKIP
# and the benchmark says it cannot run.  See docs/cuda.md.
GPU_TEST  = test/gpu/test_cuda_backend
GPU_BENCH = bench/bin/train_step_cuda
GPU_LINK  = -L. -l:headwater_cuda$(DLSUFFIX) -Wl,-rpath,'$$ORIGIN/../..' -Wl,-rpath,$(CURDIR) -lpthread
GPU_TEST_SRCS = $(sort $(wildcard test/gpu/*.c))
$(GPU_TEST): $(GPU_TEST_SRCS) $(wildcard test/gpu/*.h) headwater_cuda$(DLSUFFIX) cuda/hw_cuda_api.h $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(wildcard src/core/*.h src/backend/*.h) $(FIXTURE_HDRS)
	$(CC) $(HOST_CFLAGS) -Icuda -o $@ $(GPU_TEST_SRCS) $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(GPU_LINK) $(HOST_LIBS)
$(GPU_BENCH): bench/train_step_cuda/train_step_cuda.c headwater_cuda$(DLSUFFIX) cuda/hw_cuda_api.h $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(wildcard src/core/*.h src/backend/*.h) $(FIXTURE_HDRS)
	@mkdir -p bench/bin
	$(CC) $(HOST_CFLAGS) -O3 -Icuda -o $@ $< $(CORE_SRCS) $(BACKEND_SRCS) $(FIXTURE_SRCS) $(GPU_LINK) $(HOST_LIBS)
gpu-test: $(GPU_TEST)
	$(GPU_TEST)
gpu-bench: $(GPU_BENCH)
	$(GPU_BENCH)
.PHONY: gpu-test gpu-bench
EXTRA_CLEAN += $(GPU_TEST)

/* SPDX-License-Identifier: MIT */
/* schedulers/plugin.c: scheduling policies loaded from shared objects (helix/sched_plugin.h;
 * --sched-plugin FILE, HX_SCHED_PLUGINS).  Before anything runs, a file is checked in this
 * order, each failure one line that names the file and the way out:
 *   1. it is an ELF shared object (not an executable, an object file or text);
 *   2. its flavour is this process's: a plug-in for `helix simulate` is linked against
 *      helix-sim, whose soname is a placeholder (HX_SIM_SONAME, configure.ac), so the
 *      placeholder's bytes in the file tell the two flavours apart without loading it (a
 *      train plug-in loaded into a simulation would bring Debian's StarPU in with it);
 *   3. dlopen succeeds, it defines hx_sched_plugin_abi, and that ABI, StarPU major.minor and
 *      simulation flag are this helix's;
 *   4. it defines the entry point hx_sched_plugin_init, which returns HX_OK; the registry
 *      names the file in its own messages (a name already taken) meanwhile.
 * In a simulation every rank is a copy of helix-sim in one process (SMPI's dlopen
 * privatisation, design/simulation.md), and the plug-in must call its own rank's StarPU: each
 * rank writes a copy of the plug-in whose placeholder names this rank's copy of helix-sim (as
 * dladdr reports its path), and dlopens that; the loader finds that copy already loaded, so
 * the plug-in's symbols bind to it.  The written copy is unlinked once loaded.
 * Tests: tests/schedulers/plugins.sh (every refusal; train and simulate with a plug-in). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helix/error.h"
#include "helix/runtime.h"
#include "helix/sched_plugin.h"
#include "schedulers/registry_origin.h"

#ifndef HX_SIMULATION /* sim/sim_config.h sets it in the simulation flavour */
#define HX_SIMULATION 0
#endif

#define MAX_PLUGINS 16
#define MAX_PLUGIN_BYTES (256L << 20) /* a policy is kilobytes; this bounds a wrong file */

static char *loaded[MAX_PLUGINS];  /* canonical paths, each loaded once */
static char *origins[MAX_PLUGINS]; /* the paths as given, the registry's origins */
static int nloaded;

/* One line, prefixed the way every helix refusal is; HX_EINVAL. */
static int refuse(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(const char *path, const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    fprintf(stderr, "helix: error: scheduling plug-in %s: %s\n", path, what);
    return HX_EINVAL;
}

#define BUILD_TRAIN "cc -shared -fPIC -o NAME.so NAME.c $(pkg-config --cflags --libs helix)"
#define BUILD_SIM "cc -shared -fPIC -o NAME-sim.so NAME.c $(pkg-config --cflags --libs helix-sim)"

/* The whole file into *buf (*len bytes), or a refusal. */
static int read_file(const char *path, unsigned char **buf, long *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return refuse(path, "cannot open it (%s); give the path of a plug-in built with %s",
                      strerror(errno), BUILD_TRAIN);
    }
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n < 0 || n > MAX_PLUGIN_BYTES || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return refuse(path, n > MAX_PLUGIN_BYTES ? "%ld bytes is no policy: give a plug-in's "
                      "shared object" : "cannot read it (size %ld)", n);
    }
    *buf = malloc((size_t)n + 1);
    if (*buf == NULL || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(*buf);
        return refuse(path, "cannot read its %ld bytes", n);
    }
    fclose(f);
    *len = n;
    return HX_OK;
}

/* 1: an ELF shared object of this machine's class, or a refusal naming what it is instead */
static int check_elf(const char *path, const unsigned char *b, long n)
{
    if (n < (long)sizeof(Elf64_Ehdr) || memcmp(b, ELFMAG, SELFMAG) != 0) {
        return refuse(path, "it is not a shared object (no ELF header); build a plug-in with %s",
                      BUILD_TRAIN);
    }
    const Elf64_Ehdr *h = (const Elf64_Ehdr *)b;
    if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_type != ET_DYN) {
        return refuse(path, "it is an ELF %s, not a shared object; link it with -shared -fPIC: "
                      "%s", h->e_ident[EI_CLASS] != ELFCLASS64 ? "file of another class"
                      : h->e_type == ET_REL ? "object file (.o)"
                      : h->e_type == ET_EXEC ? "executable" : "file of another type",
                      BUILD_TRAIN);
    }
    return HX_OK;
}

/* Where the placeholder soname sits in the file, or NULL (a plug-in for helix train). */
static unsigned char *placeholder(unsigned char *b, long n, int *count)
{
    const char *ph = HX_SIM_SONAME;
    size_t len = strlen(ph) + 1; /* with its NUL: the whole string, not a prefix */
    unsigned char *first = NULL;
    *count = 0;
    for (unsigned char *p = b; (p = memmem(p, (size_t)(b + n - p), ph, len)) != NULL;
         p += len) {
        first = first ? first : p;
        ++*count;
    }
    return first;
}

#if HX_SIMULATION
/* 2 (simulation): write the plug-in's copy for this rank, its placeholder naming this rank's
 * copy of helix-sim, into *copy (a file to unlink once loaded). */
static int rank_copy(const char *path, unsigned char *b, long n, char *copy, size_t cap)
{
    int count;
    unsigned char *ph = placeholder(b, n, &count);
    if (ph == NULL) {
        return refuse(path, "it was built for helix train (against a StarPU without SimGrid); "
                      "helix simulate needs the simulation flavour: %s", BUILD_SIM);
    }
    if (count != 1) {
        return refuse(path, "it names helix-sim's placeholder %d times, not once; build it "
                      "again with %s", count, BUILD_SIM);
    }
    Dl_info self;
    if (dladdr((void *)hx_sched_plugins_load, &self) == 0 || self.dli_fname == NULL ||
        strlen(self.dli_fname) >= strlen(HX_SIM_SONAME)) {
        return refuse(path, "cannot tell where this rank's copy of helix-sim is (dladdr)");
    }
    size_t len = strlen(HX_SIM_SONAME);
    memset(ph, 0, len);
    memcpy(ph, self.dli_fname, strlen(self.dli_fname));
    const char *tmp = getenv("TMPDIR");
    snprintf(copy, cap, "%s/helix-plugin-XXXXXX.so", tmp != NULL && *tmp ? tmp : "/tmp");
    int fd = mkstemps(copy, 3);
    if (fd < 0) {
        return refuse(path, "cannot write this rank's copy %s (%s); set TMPDIR to a writable "
                      "directory", copy, strerror(errno));
    }
    int ok = write(fd, b, (size_t)n) == (ssize_t)n;
    ok &= close(fd) == 0;
    if (!ok) {
        unlink(copy);
        return refuse(path, "cannot write this rank's copy %s; free space in TMPDIR", copy);
    }
    return HX_OK;
}
#endif

/* 3 and 4: what it was built against, then its entry point */
static int check_and_init(const char *path, void *h)
{
    const struct hx_sched_plugin_abi *abi = dlsym(h, "hx_sched_plugin_abi");
    if (abi == NULL) {
        return refuse(path, "it is no helix scheduling plug-in: it defines no "
                      "hx_sched_plugin_abi (put `HX_SCHED_PLUGIN_ABI;` in it, from "
                      "<helix/sched_plugin.h>)");
    }
    unsigned starpu = STARPU_MAJOR_VERSION * 100 + STARPU_MINOR_VERSION;
    if (abi->abi != HX_SCHED_PLUGIN_ABI_VERSION) {
        return refuse(path, "it was built for plug-in ABI %u, this helix has ABI %u; rebuild it "
                      "against this helix: %s", abi->abi, HX_SCHED_PLUGIN_ABI_VERSION,
                      HX_SIMULATION ? BUILD_SIM : BUILD_TRAIN);
    }
    if (abi->starpu != starpu) {
        return refuse(path, "it was built against StarPU %u.%u, this helix runs StarPU %u.%u; "
                      "rebuild it against this helix: %s", abi->starpu / 100, abi->starpu % 100,
                      starpu / 100, starpu % 100, HX_SIMULATION ? BUILD_SIM : BUILD_TRAIN);
    }
    if (abi->simulation != HX_SIMULATION) {
        return refuse(path, "it was built for %s; build it with %s", abi->simulation ?
                      "helix simulate" : "helix train", HX_SIMULATION ? BUILD_SIM : BUILD_TRAIN);
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "hx_sched_plugin_init");
    if (init == NULL) {
        return refuse(path, "it has no entry point: define `int hx_sched_plugin_init(void)`, "
                      "which registers its policies with hx_sched_register");
    }
    int failed_before = hx_run_failed();
    hx_sched_registry_loading(path);
    int ret = init();
    hx_sched_registry_loading(NULL);
    if (ret != HX_OK) {
        if (hx_run_failed() && !failed_before) {
            return HX_EINVAL; /* the registry (or the plug-in through HX_ERR) said why */
        }
        return refuse(path, "its hx_sched_plugin_init returned %d (%s) without a message",
                      ret, hx_status_str(ret));
    }
    return HX_OK;
}

static int load_one(const char *path)
{
    char real[PATH_MAX];
    if (realpath(path, real) == NULL) {
        return refuse(path, "cannot open it (%s); give the path of a plug-in built with %s",
                      strerror(errno), HX_SIMULATION ? BUILD_SIM : BUILD_TRAIN);
    }
    for (int i = 0; i < nloaded; i++) {
        if (strcmp(loaded[i], real) == 0) {
            return HX_OK; /* named twice (the flag and HX_SCHED_PLUGINS): loaded once */
        }
    }
    if (nloaded == MAX_PLUGINS) {
        return refuse(path, "more than %d plug-ins; put the policies in fewer files",
                      MAX_PLUGINS);
    }
    unsigned char *b = NULL;
    long n = 0;
    int ret = read_file(path, &b, &n);
    if (ret == HX_OK) {
        ret = check_elf(path, b, n);
    }
    const char *open_path = real;
    char copy[PATH_MAX];
#if HX_SIMULATION
    if (ret == HX_OK && (ret = rank_copy(path, b, n, copy, sizeof copy)) == HX_OK) {
        open_path = copy;
    }
#else
    int count;
    if (ret == HX_OK && placeholder(b, n, &count) != NULL) {
        ret = refuse(path, "it was built for helix simulate (against helix-sim); helix train "
                     "needs it built with %s", BUILD_TRAIN);
    }
    (void)copy;
#endif
    free(b);
    if (ret != HX_OK) {
        return ret;
    }
    /* RTLD_LOCAL: two plug-ins may both have a static `policy`; RTLD_NOW: an unresolved
     * symbol is refused here, not in the middle of a step */
    void *h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (open_path != real) {
        unlink(open_path);
    }
    if (h == NULL) {
        return refuse(path, "dlopen failed: %s; rebuild it against this helix: %s", dlerror(),
                      HX_SIMULATION ? BUILD_SIM : BUILD_TRAIN);
    }
    /* the registry keeps the name as its policies' origin: it lives as long as the process,
     * also when the entry point fails after registering one (the file stays loaded) */
    char *name = strdup(path);
    HX_ASSERT(name != NULL, "out of memory");
    origins[nloaded] = name;
    if ((ret = check_and_init(name, h)) != HX_OK) {
        return ret;
    }
    loaded[nloaded] = strdup(real);
    HX_ASSERT(loaded[nloaded] != NULL, "out of memory");
    nloaded++;
    return HX_OK;
}

int hx_sched_plugins_load(const char *paths)
{
    if (paths == NULL) {
        return HX_OK;
    }
    char *list = strdup(paths), *save = NULL;
    HX_ASSERT(list != NULL, "out of memory");
    int ret = HX_OK;
    for (char *p = strtok_r(list, ":", &save); p != NULL && ret == HX_OK;
         p = strtok_r(NULL, ":", &save)) {
        ret = load_one(p);
    }
    free(list);
    return ret;
}

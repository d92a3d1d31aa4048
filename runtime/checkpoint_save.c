/* SPDX-License-Identifier: MIT */
/* runtime/checkpoint_save.c: writing the training state (helix/checkpoint.h), format in
 * runtime/ckpt_format.h.
 *
 * A save has two halves.  Start: rank 0 makes the file's bytes ready in memory, then forks a
 * writer process that calls setsid, so that neither the end of rank 0 nor a kill of its
 * process group (mpirun's, one second after its SIGTERM) stops it.  When rank 0 holds every
 * state whole (no tp, pp or sharding), fork's copy-on-write is the snapshot: the writer
 * reads the tensors themselves and the start costs a fork.  Otherwise every rank takes part
 * in the gathers and rank 0 copies the states into one buffer (12 bytes a parameter).  The
 * writer writes ckpt-<step>.bin.tmp with its checksum, fsyncs, renames, fsyncs the directory,
 * replaces `latest` the same way, prunes, reports on a pipe and exits: a crash or a full disk
 * at any point leaves the last good checkpoint.  Wait: rank 0 waits for its writers while
 * every rank joins an all-reduce each HEARTBEAT period, so the other ranks' --comm-timeout
 * watchdog sees progress and still catches a rank 0 that died; a caller's flag (a stop
 * signal) ends the wait early, the writer going on by itself.  Writers run one after the
 * other: each waits for the previous one to exit (the read end of its "alive" pipe) before
 * it touches the directory.  A directory is claimed once per run (flock on DIR/.lock, held
 * by the run and inherited by its writers), so two runs never write to one directory.
 *
 *   rank 0:  [gather ->] image -> fork --------------------------------> wait (poll report)
 *   writer:                       setsid, [wait prev] tmp, fsync, rename, latest, prune, report
 *   rank k:  [gather] ---------------> agree -------> heartbeat all-reduces until done
 *
 * The writer runs in a child of a multithreaded process, where another thread may have held
 * any lock at fork: it only makes system calls and formats into its own buffers (no FILE
 * streams, no malloc, no opendir).  Test: tests/graphs/checkpoint.c, tests/cli/save_dir.sh,
 * tests/mpi/sigterm.sh, tests/mpi/watchdog.sh (a slow write). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helix/checkpoint.h"
#include "helix/comm.h"
#include "helix/error.h"
#include "helix/tensor.h"
#include "runtime/ckpt_format.h"

#define HEARTBEAT_MAX_S 0.25  /* rank 0 joins an all-reduce at least this often while waiting */
#define MAX_WRITERS 4         /* writers in flight; one more start waits for the oldest */
#define CHUNK (8u << 20)      /* bytes hashed and written at a time */

/* The fix for a failed write, by errno: a full disk and the file size limit are the common ones. */
static const char *io_hint(int err)
{
    switch (err) {
    case ENOSPC: return "disk full; free space or choose another --save directory";
    case EFBIG: return "file too large for the file size limit (ulimit -f) or the file system; "
                       "raise the limit or choose another --save directory";
    case EACCES: case EPERM: case EROFS: return "no permission; choose a writable --save directory";
    default: return "check the --save directory";
    }
}

/* ---- the writer (child process, or this process when fork fails) ---- */

/* One save in memory: the file's bytes but its trailer, as segments, and where they go. */
struct seg {
    const unsigned char *p;
    size_t n;
};
struct image {
    struct seg *segs;         /* the header, then per tensor its record head and 3 states */
    int nsegs;
    unsigned char *own;       /* the header and record heads (and gathered states) */
    const char *dir;
    char name[64];            /* ckpt-<step>.bin */
};

/* What the writer tells its parent: "E text" (the save failed) or "W text" lines. */
struct report {
    char text[2048];
    size_t len;
    int failed;
};

static void say(struct report *r, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(struct report *r, int error, const char *fmt, ...)
{
    va_list ap;
    size_t room = sizeof r->text - r->len;
    if (room < 4) {
        return;
    }
    r->text[r->len++] = error ? 'E' : 'W';
    r->text[r->len++] = ' ';
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->len, room - 3, fmt, ap);
    va_end(ap);
    r->len += n < 0 ? 0 : (size_t)n < room - 3 ? (size_t)n : room - 4;
    r->text[r->len++] = '\n';
    r->text[r->len] = '\0';
    r->failed |= error;
}

/* errno's text, untranslated: strerror may take the locale's locks */
static const char *err_text(int err)
{
    const char *s = strerrordesc_np(err);
    return s != NULL ? s : "unknown error";
}

#define SAY_ERR(r, what, path, err)                                                             \
    say((r), 1, "%s '%s' failed: %s (%s); the previous checkpoint and 'latest' are kept",      \
        (what), (path), err_text(err), io_hint(err))

static int write_all(int fd, const void *p, size_t n)
{
    const unsigned char *b = p;
    while (n > 0) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return w < 0 ? errno : EIO;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A directory's entries are durable only once the directory itself is synced.  Some file
 * systems cannot sync a directory (EINVAL); there the rename is as durable as it gets. */
static int sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        return errno;
    }
    int err = fsync(fd) != 0 && errno != EINVAL ? errno : 0;
    close(fd);
    return err;
}

/* The name in dir/latest (ckpt_format.c's reader uses stdio): 1, 0 without one, -1 bad. */
static int read_latest(const char *dir, char *name, size_t size)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/latest", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC), tmp;
    if (fd < 0) {
        return errno == ENOENT ? 0 : -1;
    }
    ssize_t n = read(fd, name, size - 1);
    close(fd);
    name[n > 0 ? n : 0] = '\0';
    name[strcspn(name, "\n")] = '\0';
    return n > 0 && hx_ckpt_is_name(name, &tmp) && !tmp ? 1 : -1;
}

static int write_latest(const char *dir, const char *name, struct report *r)
{
    char tmp[PATH_MAX], path[PATH_MAX], line[64];
    snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
    snprintf(path, sizeof path, "%s/latest", dir);
    int n = snprintf(line, sizeof line, "%s\n", name);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        SAY_ERR(r, "creating", tmp, errno);
        return -1;
    }
    int err = write_all(fd, line, (size_t)n);
    err = err == 0 && fsync(fd) != 0 ? errno : err;
    err = close(fd) != 0 && err == 0 ? errno : err;
    err = err == 0 && rename(tmp, path) != 0 ? errno : err;
    if (err != 0) {
        unlink(tmp);
        SAY_ERR(r, "writing", path, err);
        return -1;
    }
    return 0;
}

/* Delete checkpoints (and .tmp leftovers) but the new one and the one `latest` named before.
 * getdents64, not opendir, which allocates. */
static void prune(const char *dir, const char *keep_new, const char *keep_prev,
                  struct report *r)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), tmp;
    long n;
    char buf[8192] __attribute__((aligned(8)));
    while (fd >= 0 && (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        const struct dirent64 *e;
        for (long off = 0; off < n; off += e->d_reclen) {
            e = (const struct dirent64 *)(const void *)(buf + off);
            const char *name = e->d_name;
            if (hx_ckpt_is_name(name, &tmp) && strcmp(name, keep_new) != 0 &&
                strcmp(name, keep_prev) != 0 && unlinkat(fd, name, 0) != 0) {
                say(r, 0, "could not delete old checkpoint '%s/%s': %s", dir, name,
                    err_text(errno));
            }
        }
    }
    if (fd >= 0) {
        close(fd);
    }
}

/* Write @p img to its directory: tmp, checksum, fsync, rename, sync, `latest`, sync, prune.
 * On failure the directory is as it was (no .tmp) and @p r says why. */
static void write_image(const struct image *img, struct report *r)
{
    char tmp[PATH_MAX + 8], path[PATH_MAX], prev[256];
    snprintf(path, sizeof path, "%s/%s", img->dir, img->name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), err = 0;
    if (fd < 0) {
        SAY_ERR(r, "creating checkpoint", tmp, errno);
        return;
    }
    uint64_t hash = FNV_OFFSET;
    for (int i = 0; i < img->nsegs && err == 0; i++) {
        const struct seg *g = &img->segs[i];
        for (size_t off = 0; off < g->n && err == 0; off += CHUNK) {
            size_t len = g->n - off < CHUNK ? g->n - off : CHUNK;
            hash = hx_ckpt_fnv1a(hash, g->p + off, len);
            err = write_all(fd, g->p + off, len);
        }
    }
    unsigned char tr[TRAILER];
    memcpy(tr, &hash, 8);
    memcpy(tr + 8, END_MARK, 8);
    err = err == 0 ? write_all(fd, tr, sizeof tr) : err;
    err = err == 0 && fsync(fd) != 0 ? errno : err; /* only fsync proves the bytes are on disk */
    err = close(fd) != 0 && err == 0 ? errno : err;
    if (err != 0) {
        SAY_ERR(r, "writing checkpoint", tmp, err);
        unlink(tmp);
        return;
    }
    /* rename is atomic: a same-step file that `latest` names is replaced, never half-written */
    if (rename(tmp, path) != 0) {
        SAY_ERR(r, "renaming the checkpoint to", path, errno);
        unlink(tmp);
        return;
    }
    int have = read_latest(img->dir, prev, sizeof prev);
    if (have <= 0) {
        prev[0] = '\0';
    }
    err = sync_dir(img->dir);
    if (err != 0) {
        SAY_ERR(r, "syncing checkpoint directory", img->dir, err);
    }
    if (err != 0 || write_latest(img->dir, img->name, r) != 0) {
        if (strcmp(img->name, prev) != 0) {
            unlink(path); /* `latest` still names prev: put the directory back as it was */
        }
        return;
    }
    if ((err = sync_dir(img->dir)) != 0) { /* `latest` is replaced: the new file stays */
        say(r, 1, "syncing checkpoint directory '%s' failed after 'latest' named %s: %s; the "
            "checkpoint is complete but a crash now could lose it", img->dir, img->name,
            err_text(err));
        return;
    }
    if (have >= 0) {
        prune(img->dir, img->name, prev, r);
    } else {
        say(r, 0, "'%s/latest' was unreadable before this save; old checkpoints are kept",
            img->dir);
    }
}

/* ---- writers in flight (rank 0) ---- */

static struct writer {
    pid_t pid;
    int report;          /* read end of its report pipe */
    int alive;           /* read end of a pipe only it can write: EOF once it has exited */
    long long step;
    char dir[PATH_MAX];
} writers[MAX_WRITERS];
static int nwriters;
static int lock_fd = -1; /* hx_checkpoint_claim's DIR/.lock, inherited by the writers */

/* In the child: close every descriptor but stdio and @p keep (sorted, -1 ignored), so the
 * writer holds no MPI socket or log file open after the run has ended. */
static void close_others(int *keep, int n)
{
    for (int i = 1; i < n; i++) { /* insertion sort of a handful */
        for (int j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    }
    unsigned lo = 3;
    for (int i = 0; i < n; i++) {
        if (keep[i] >= (int)lo) {
            if ((unsigned)keep[i] > lo) {
                close_range(lo, (unsigned)keep[i] - 1, 0);
            }
            lo = (unsigned)keep[i] + 1;
        }
    }
    close_range(lo, ~0u, 0);
}

/* The writer process: never returns. */
static void writer_main(const struct image *img, int report, int alive, int prev_alive,
                        long long step)
{
    setsid(); /* out of the rank's process group: mpirun's kill of the job does not reach us */
    /* the lowest priority: the ranks, still computing or exiting together, come first */
    setpriority(PRIO_PROCESS, 0, 19);
    struct sigaction dfl = { .sa_handler = SIG_DFL }, ign = { .sa_handler = SIG_IGN };
    sigemptyset(&dfl.sa_mask);
    sigemptyset(&ign.sa_mask);
    int defaults[] = { SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGCONT };
    for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++) {
        sigaction(defaults[i], &dfl, NULL); /* the parent's stop handlers are not ours */
    }
    sigaction(SIGPIPE, &ign, NULL); /* a parent gone: report to stderr instead */
    sigaction(SIGXFSZ, &ign, NULL); /* past a file size limit write() fails with EFBIG */
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    int keep[] = { report, alive, prev_alive, lock_fd };
    close_others(keep, 4);
    for (char c; prev_alive >= 0;) { /* the previous writer's pipe: EOF once it has exited */
        ssize_t n = read(prev_alive, &c, 1);
        if (n == 0 || (n < 0 && errno != EINTR)) {
            break;
        }
    }
    struct report r = { .len = 0 };
    write_image(img, &r);
    if (write_all(report, r.text, r.len) != 0) {
        /* the run is over (a signal stop under mpirun): say it where its output went */
        char line[2200];
        const char *e = r.text;
        while (r.failed && e[0] != 'E') {
            e = strchr(e, '\n') + 1;
        }
        int n = r.failed ? snprintf(line, sizeof line, "helix: error: checkpoint of step %lld "
                                    "(writer %ld): %.*s\n", step, (long)getpid(),
                                    (int)strcspn(e + 2, "\n"), e + 2)
                         : snprintf(line, sizeof line, "helix: the checkpoint of step %lld is "
                                    "complete: %s/%s (writer %ld)\n", step, img->dir,
                                    img->name, (long)getpid());
        if (n > 0) {
            write_all(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        }
    }
    _exit(r.failed ? 1 : 0);
}

/* Report a writer's lines ("E text": HX_ERR, "W text": a warning) for the save of @p step;
 * @return HX_OK or HX_EIO. */
static int relay(char *text, long long step)
{
    int ret = HX_OK;
    for (char *line = text; *line != '\0';) {
        char *end = line + strcspn(line, "\n");
        int more = *end != '\0';
        *end = '\0';
        if (line[0] == 'E' && line[1] == ' ') {
            ret = HX_ERR(HX_EIO, "checkpoint of step %lld: %s", step, line + 2);
        } else if (line[0] == 'W' && line[1] == ' ') {
            hx_warn("checkpoint of step %lld: %s", step, line + 2);
        }
        line = end + more;
    }
    return ret;
}

/* Print what writer @p i reported, wait for its exit; @return its status.  Blocks until
 * it has exited. */
static int reap(int i)
{
    struct writer *w = &writers[i];
    char text[2048 + 1];
    size_t len = 0;
    ssize_t n;
    while ((n = read(w->report, text + len, sizeof text - 1 - len)) != 0) {
        if (n < 0 && errno != EINTR) {
            break;
        }
        len += n > 0 ? (size_t)n : 0;
        if (len == sizeof text - 1) {
            break;
        }
    }
    text[len] = '\0';
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR) {
    }
    int ret = relay(text, w->step);
    if (ret == HX_OK && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
        char how[64];
        if (WIFSIGNALED(st)) {
            snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(st));
        } else {
            snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
        }
        ret = HX_ERR(HX_EIO, "the writer process (pid %ld) of the checkpoint of step %lld to "
                     "'%s' %s; '%s/latest' names the last complete checkpoint", (long)w->pid,
                     w->step, w->dir, how, w->dir);
    }
    close(w->report);
    close(w->alive);
    memmove(&writers[i], &writers[i + 1], sizeof *writers * (size_t)(nwriters - i - 1));
    nwriters--;
    return ret;
}

/* Reap the writers that have exited (all of them with @p block); the first failure. */
static int reap_finished(int block)
{
    int ret = HX_OK;
    while (nwriters > 0) {
        struct pollfd p = { .fd = writers[0].alive, .events = POLLIN };
        if (!block && poll(&p, 1, 0) == 0) {
            break; /* writers finish in order: the oldest is still running */
        }
        int r = reap(0);
        ret = ret == HX_OK ? r : ret;
    }
    return ret;
}

/* Hand @p img to a new writer process; without one (fork failed) write it here. */
static int spawn(const struct image *img, long long step)
{
    int rep[2], alive[2];
    if (pipe2(rep, O_CLOEXEC) != 0) {
        return HX_ERR(HX_ERUNTIME, "pipe for the checkpoint writer: %s", strerror(errno));
    }
    if (pipe2(alive, O_CLOEXEC) != 0) {
        close(rep[0]);
        close(rep[1]);
        return HX_ERR(HX_ERUNTIME, "pipe for the checkpoint writer: %s", strerror(errno));
    }
    int prev = nwriters > 0 ? writers[nwriters - 1].alive : -1;
    pid_t pid = fork(); /* (the child never flushes stdio: what is buffered stays ours) */
    if (pid == 0) {
        close(rep[0]);
        close(alive[0]);
        writer_main(img, rep[1], alive[1], prev, step);
    }
    close(rep[1]);
    close(alive[1]);
    if (pid < 0) {
        int err = errno;
        close(rep[0]);
        close(alive[0]);
        hx_warn("cannot start a checkpoint writer process (fork: %s); writing the checkpoint "
                "of step %lld in this process", strerror(err), step);
        int ret = reap_finished(1); /* in order, after the ones in flight */
        struct report r = { .len = 0 };
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGXFSZ, &ign, &old);
        write_image(img, &r);
        sigaction(SIGXFSZ, &old, NULL);
        int r2 = relay(r.text, step);
        return ret != HX_OK ? ret : r2;
    }
    struct writer *w = &writers[nwriters++];
    w->pid = pid;
    w->report = rep[0];
    w->alive = alive[0];
    w->step = step;
    snprintf(w->dir, sizeof w->dir, "%s", img->dir);
    return HX_OK;
}

/* ---- the collective halves ---- */

/* mkdir -p, then make sure the result is a directory we can write. */
static int make_dir(const char *dir)
{
    char p[PATH_MAX - 32]; /* room for "/ckpt-<step>.bin.tmp" */
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof p) {
        return HX_ERR(HX_EIO, "checkpoint directory '%s' is empty or too long; give --save a "
                      "shorter directory path", dir);
    }
    memcpy(p, dir, n + 1);
    for (char *s = p + 1; s <= p + n; s++) {
        if (*s == '/' || *s == '\0') {
            char was = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                return HX_ERR(HX_EIO, "cannot create checkpoint directory '%s' (at '%s'): %s; "
                              "give --save a directory path you can write", dir, p,
                              strerror(errno));
            }
            *s = was;
        }
    }
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        return HX_ERR(HX_EIO, "checkpoint directory '%s' exists but is not a directory; give "
                      "--save a directory path", dir);
    }
    if (access(dir, W_OK | X_OK) != 0) {
        return HX_ERR(HX_EIO, "checkpoint directory '%s' is not writable: %s; fix its "
                      "permissions or choose another --save directory", dir, strerror(errno));
    }
    return HX_OK;
}

/* Rank 0's status, known to every rank (a distributed save must end the same everywhere). */
static int agree(hx_gpt_t m, int ret)
{
    if (hx_gpt_mesh(m)->world_size > 1 &&
        hx_comm_host_bcast(HX_GROUP_WORLD, &ret, sizeof ret, 0) != HX_OK) {
        return HX_ERUNTIME;
    }
    return ret;
}

/* Rank 0 holds every state whole, in the serial layout, in its own memory (no tensor
 * parallelism, no pipeline, no sharding): the writer then reads them from its copy of rank
 * 0's memory (fork's copy-on-write is the snapshot), and nothing is copied before the fork. */
static int held_whole(hx_gpt_t m)
{
    const struct hx_mesh *ms = hx_gpt_mesh(m);
    return ms->tp == 1 && ms->pp == 1 && ms->sp.s == 1 && ms->sos.s == 1;
}

static hx_tensor_t state_tensor(hx_gpt_t m, int i, int k)
{
    return k == HX_STATE_PARAM ? hx_gpt_param(m, i) : k == HX_STATE_ADAM_M ? hx_gpt_adam_m(m, i)
                                                                          : hx_gpt_adam_v(m, i);
}

/* The file but its trailer, as segments of @p img (rank 0; the other ranks only take part in
 * the gathers, img NULL).  Held whole: the segments point at the tensors, each acquired for
 * reading (end_reads releases them after the fork); otherwise every state is gathered into
 * img->own.  A failed allocation does not stop the gathers: the other ranks are in them. */
static int build_image(hx_gpt_t m, const struct hx_checkpoint_info *info, struct image *img)
{
    int whole = held_whole(m), nt = hx_gpt_num_param_tensors(m);
    if (img == NULL && whole) {
        return HX_OK; /* nothing to gather */
    }
    struct hdr h = { .version = CKPT_VERSION, .ntensors = (uint32_t)nt,
                     .args_len = (uint32_t)strlen(info->args) };
    h.header_bytes = FIXED_HEADER + h.args_len;
    size_t largest = 0;
    for (int i = 0; i < nt; i++) {
        int rows, cols;
        hx_gpt_param_shape(m, i, &rows, &cols);
        h.payload_bytes += RECORD_HEAD + 3 * sizeof(float) * (uint64_t)rows * (uint64_t)cols;
        largest = (size_t)rows * (size_t)cols > largest ? (size_t)rows * (size_t)cols : largest;
    }
    size_t own = h.header_bytes + (whole ? (size_t)nt * RECORD_HEAD : h.payload_bytes);
    float *buf = whole ? NULL : malloc(largest * sizeof(float)); /* aligned, unlike the file */
    int ret = whole || buf != NULL ? HX_OK : HX_ERR(HX_ENOMEM, "%zu bytes to gather a tensor",
                                                    largest * sizeof(float));
    unsigned char *p = NULL;
    if (img != NULL) {
        img->nsegs = 0;
        img->segs = malloc(sizeof *img->segs * (size_t)(1 + 4 * nt));
        p = img->own = malloc(own);
        if ((img->segs == NULL || p == NULL) && ret == HX_OK) {
            ret = HX_ERR(HX_ENOMEM, "%zu bytes for the checkpoint in memory%s", own,
                         whole ? "" : " (the whole model state, 12 bytes a parameter, on "
                                      "rank 0)");
        }
        if (ret != HX_OK) {
            p = NULL;
        }
    }
    if (p != NULL) {
        struct hx_checkpoint_info copy = *info; /* code_header takes the fields by pointer */
        memcpy(p, MAGIC, 8);
        hx_ckpt_code_header(p, 0, &h, &copy.model, &copy.optim, &copy.state);
        memcpy(p + FIXED_HEADER, info->args, h.args_len);
        img->segs[img->nsegs++] = (struct seg){ p, h.header_bytes };
        p += h.header_bytes;
    }
    for (int i = 0; i < nt; i++) {
        int rows, cols;
        hx_gpt_param_shape(m, i, &rows, &cols);
        size_t bytes = (size_t)rows * (size_t)cols * sizeof(float);
        if (p != NULL) {
            const char *name = hx_gpt_param_name(m, i);
            memset(p, 0, RECORD_HEAD);
            memcpy(p, name, strnlen(name, HX_NAME_MAX - 1));
            memcpy(p + HX_NAME_MAX, &rows, 4);
            memcpy(p + HX_NAME_MAX + 4, &cols, 4);
            img->segs[img->nsegs++] = (struct seg){ p, RECORD_HEAD };
            p += RECORD_HEAD;
        }
        for (int k = HX_STATE_PARAM; k <= HX_STATE_ADAM_V; k++) {
            hx_tensor_t t = whole ? state_tensor(m, i, k) : NULL;
            if (whole && p != NULL) {
                HX_ASSERT(t != NULL && hx_tensor_bytes(t) == bytes && t->dtype == HX_F32,
                          "state %d of %s is not held whole on rank 0", k, t ? t->name : "?");
                int r = hx_tensor_begin_access(t, 'r');
                ret = ret == HX_OK ? r : ret;
                img->segs[img->nsegs++] = (struct seg){ r == HX_OK ? t->data : NULL,
                                                        r == HX_OK ? bytes : 0 };
                continue;
            }
            int r = buf != NULL ? hx_gpt_gather_state(m, i, (enum hx_state_kind)k, buf)
                                : HX_ENOMEM;
            ret = ret == HX_OK ? r : ret;
            if (p != NULL && r == HX_OK) {
                memcpy(p, buf, bytes);
                img->segs[img->nsegs++] = (struct seg){ p, bytes };
            }
            p = p != NULL ? p + bytes : NULL;
        }
    }
    free(buf);
    return ret;
}

/* Release what build_image acquired and allocated. */
static void end_image(hx_gpt_t m, struct image *img)
{
    for (int i = 0; img->segs != NULL && held_whole(m) && i < hx_gpt_num_param_tensors(m); i++) {
        for (int k = HX_STATE_PARAM; k <= HX_STATE_ADAM_V; k++) {
            const struct seg *g = &img->segs[1 + 4 * i + 1 + k];
            if (1 + 4 * i + 1 + k < img->nsegs && g->p != NULL) {
                hx_tensor_end_access(state_tensor(m, i, k));
            }
        }
    }
    free(img->segs);
    free(img->own);
}

int hx_checkpoint_save_start(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    if (strnlen(info->args, sizeof info->args) == sizeof info->args || info->state.step < 0) {
        return HX_ERR(HX_EINVAL, "checkpoint info for '%s': args not NUL-terminated or step "
                      "%lld < 0 (a helix bug)", dir, (long long)info->state.step);
    }
    int writer = hx_gpt_mesh(m)->world_rank == 0;
    int ret = writer ? make_dir(dir) : HX_OK;
    struct image img = { .dir = dir, .segs = NULL, .own = NULL };
    snprintf(img.name, sizeof img.name, "ckpt-%08lld.bin", (long long)info->state.step);
    if (ret == HX_OK && writer && nwriters == MAX_WRITERS) {
        ret = reap(0); /* only a caller that never waits gets here */
    }
    if ((ret = agree(m, ret)) != HX_OK) {
        return ret;
    }
    ret = build_image(m, info, writer ? &img : NULL);
    if (writer) {
        int r = reap_finished(0); /* a failure of an earlier save, reported now */
        ret = ret == HX_OK ? spawn(&img, (long long)info->state.step) : ret;
        ret = ret == HX_OK ? r : ret;
        end_image(m, &img); /* the writer has its own copy of the pages */
    }
    return agree(m, ret);
}

int hx_checkpoint_save_wait(hx_gpt_t m, const volatile sig_atomic_t *interrupt, long *pending)
{
    const struct hx_mesh *ms = hx_gpt_mesh(m);
    int writer = ms->world_rank == 0, ret = HX_OK;
    double timeout = hx_comm_timeout();
    double beat = timeout > 0 && timeout / 4 < HEARTBEAT_MAX_S ? timeout / 4 : HEARTBEAT_MAX_S;
    for (;;) {
        if (writer) {
            int r = reap_finished(0);
            ret = ret == HX_OK ? r : ret;
        }
        /* busy (rank 0), interrupted (any rank), rank 0's status: one heartbeat */
        int v[3] = { writer ? nwriters : 0, interrupt != NULL && *interrupt != 0,
                     writer ? -ret : 0 };
        if (ms->world_size > 1 &&
            hx_comm_host_allreduce(HX_GROUP_WORLD, v, 3, HX_I32, HX_MAX) != HX_OK) {
            return HX_ERUNTIME;
        }
        if (v[0] == 0 || v[1] != 0) {
            ret = -v[2];
            break;
        }
        if (writer) { /* until the oldest writer exits, or the next heartbeat is due */
            struct pollfd p = { .fd = writers[0].alive, .events = POLLIN };
            poll(&p, 1, (int)(beat * 1000));
        }
    }
    if (pending != NULL) {
        *pending = writer && nwriters > 0 ? (long)writers[nwriters - 1].pid : 0;
    }
    return ret;
}

int hx_checkpoint_save(const char *dir, hx_gpt_t m, const struct hx_checkpoint_info *info)
{
    int ret = hx_checkpoint_save_start(dir, m, info);
    int wret = hx_checkpoint_save_wait(m, NULL, NULL); /* an earlier save's too */
    return ret != HX_OK ? ret : wret;
}

/* ---- claiming a directory for a run ---- */

/* @p resume (a --load path) is @p dir or a file in it: the run continues dir's checkpoints. */
static int resumes(const char *dir, const char *resume)
{
    struct stat d, r;
    if (resume == NULL || stat(dir, &d) != 0 || stat(resume, &r) != 0) {
        return 0;
    }
    if (!S_ISDIR(r.st_mode)) {
        char parent[PATH_MAX];
        snprintf(parent, sizeof parent, "%s", resume);
        char *slash = strrchr(parent, '/');
        if (slash == NULL) {
            snprintf(parent, sizeof parent, ".");
        } else {
            slash[slash == parent] = '\0'; /* "/ckpt.bin" -> "/" */
        }
        if (stat(parent, &r) != 0) {
            return 0;
        }
    }
    return d.st_dev == r.st_dev && d.st_ino == r.st_ino;
}

/* The first checkpoint name in @p dir (`latest`'s, else any ckpt-*.bin), or 0 if none. */
static int holds_checkpoints(const char *dir, char *name, size_t size)
{
    char path[PATH_MAX], latest[128];
    int have = read_latest(dir, latest, sizeof latest), tmp;
    snprintf(path, sizeof path, "%s/latest", dir);
    if (have > 0) {
        snprintf(name, size, "'latest' names %s", latest);
        return 1;
    }
    if (have < 0 || access(path, F_OK) == 0) {
        snprintf(name, size, "a 'latest' file");
        return 1;
    }
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (hx_ckpt_is_name(e->d_name, &tmp) && !tmp) {
            snprintf(name, size, "%s", e->d_name);
            closedir(d);
            return 1;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return 0;
}

int hx_checkpoint_claim(const char *dir, const char *resume)
{
    int ret = make_dir(dir);
    if (ret != HX_OK) {
        return ret;
    }
    char path[PATH_MAX], text[64] = "", name[256];
    snprintf(path, sizeof path, "%s/.lock", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        return HX_ERR(HX_EIO, "cannot create the lock file '%s': %s; give --save a directory "
                      "you can write", path, strerror(errno));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        ssize_t n = err == EWOULDBLOCK ? pread(fd, text, sizeof text - 1, 0) : -1;
        close(fd);
        text[n > 0 ? n : 0] = '\0';
        long pid = atol(text);
        if (err != EWOULDBLOCK) {
            return HX_ERR(HX_EIO, "cannot lock '%s': %s; give --save a directory on a file "
                          "system with flock (a local disk)", path, strerror(err));
        }
        if (pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH) {
            return HX_ERR(HX_EINVAL, "--save directory '%s' is still being written by the "
                          "checkpoint writer of an earlier run (pid %ld, which has ended); "
                          "wait a few seconds for its last checkpoint to be complete, then "
                          "run again", dir, pid);
        }
        return HX_ERR(HX_EINVAL, "--save directory '%s' is in use by another helix run (pid "
                      "%ld holds '%s'); two runs cannot save to one directory: wait for it to "
                      "end, or choose another --save directory", dir, pid, path);
    }
    if (!resumes(dir, resume) && holds_checkpoints(dir, name, sizeof name)) {
        close(fd); /* unlocks */
        return HX_ERR(HX_EINVAL, "--save directory '%s' holds the checkpoints of another run "
                      "(%s) and this run would replace them; to continue that run add --load "
                      "%s, or choose a new --save directory", dir, name, dir);
    }
    int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)n, 0) != n) {
        hx_warn("cannot write this run's pid into '%s': %s", path, strerror(errno));
    }
    hx_checkpoint_release(); /* a second claim in one process: the newer directory is its */
    lock_fd = fd;
    return HX_OK;
}

void hx_checkpoint_release(void)
{
    if (lock_fd >= 0) {
        close(lock_fd); /* writers in flight keep their copy, and the lock, until they exit */
        lock_fd = -1;
    }
}

int hx_checkpoint_latest(const char *dir, char *name, size_t size)
{
    return read_latest(dir, name, size);
}


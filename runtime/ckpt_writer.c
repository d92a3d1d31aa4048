/* SPDX-License-Identifier: MIT */
/* runtime/ckpt_writer.c: rank 0's checkpoint writer processes (runtime/ckpt_writer.h).  The
 * writer writes ckpt-<step>.bin.tmp with its checksum, fsyncs, renames, fsyncs the directory,
 * replaces `latest` the same way, prunes, reports on a pipe and exits: a crash or a full disk
 * at any point leaves the last good checkpoint.  It runs in a child of a multithreaded
 * process, where another thread may have held any lock at fork: it only makes system calls
 * and formats into its own buffers (no FILE streams, no malloc, no opendir).  Design: the top
 * of runtime/checkpoint_save.c. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helix/error.h"
#include "runtime/ckpt_format.h"
#include "runtime/ckpt_writer.h"

#define MAX_WRITERS 4    /* writers in flight; one more start waits for the oldest */
#define CHUNK (8u << 20) /* bytes hashed and written at a time */

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

/* (hx_ckpt_read_latest, ckpt_format.c, uses stdio, which a writer must not) */
int hx_ckpt_latest_raw(const char *dir, char *name, size_t size)
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
static void write_image(const struct hx_ckpt_image *img, struct report *r)
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
        const struct hx_ckpt_seg *g = &img->segs[i];
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
    int have = hx_ckpt_latest_raw(img->dir, prev, sizeof prev);
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
static void writer_main(const struct hx_ckpt_image *img, int report, int alive, int prev_alive,
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

int hx_ckpt_writers_reap(int block)
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

int hx_ckpt_writer_spawn(const struct hx_ckpt_image *img, long long step)
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
        int ret = hx_ckpt_writers_reap(1); /* in order, after the ones in flight */
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

int hx_ckpt_writer_reap_oldest(void)
{
    return nwriters > 0 ? reap(0) : HX_OK;
}

int hx_ckpt_writers_running(void)
{
    return nwriters;
}

int hx_ckpt_writers_full(void)
{
    return nwriters == MAX_WRITERS;
}

long hx_ckpt_writer_newest_pid(void)
{
    return nwriters > 0 ? (long)writers[nwriters - 1].pid : 0;
}

void hx_ckpt_writer_wait_oldest(int ms)
{
    if (nwriters > 0) {
        struct pollfd p = { .fd = writers[0].alive, .events = POLLIN };
        poll(&p, 1, ms);
    }
}

void hx_ckpt_writer_set_lock(int fd)
{
    lock_fd = fd;
}

int hx_ckpt_writer_lock(void)
{
    return lock_fd;
}

/* SPDX-License-Identifier: MIT */
/* runtime/ckpt_writer.h: rank 0's checkpoint writer processes (runtime/ckpt_writer.c), used by
 * runtime/checkpoint_save.c.  A save hands the file's bytes, as segments in memory, to a
 * forked writer that writes, syncs and renames them, replaces `latest`, prunes and reports on
 * a pipe; writers run one after the other, oldest first.  The design, and why the writer only
 * makes system calls, is at the top of runtime/checkpoint_save.c. */
#ifndef HX_CKPT_WRITER_H
#define HX_CKPT_WRITER_H

#include <stddef.h>

/* One save in memory: the file's bytes but its trailer, as segments, and where they go. */
struct hx_ckpt_seg {
    const unsigned char *p;
    size_t n;
};
struct hx_ckpt_image {
    struct hx_ckpt_seg *segs; /* the header, then per tensor its record head and 3 states */
    int nsegs;
    unsigned char *own;       /* the header and record heads (and gathered states) */
    const char *dir;
    char name[64];            /* ckpt-<step>.bin */
};

/* Hand @p img to a new writer process (without one, when fork fails, write it here); the
 * caller may free @p img on return: the writer has its own copy of the pages. */
int hx_ckpt_writer_spawn(const struct hx_ckpt_image *img, long long step);

/* Report and reap the writers that have exited, all of them with @p block; the first failure
 * (HX_EIO with the writer's error), else HX_OK. */
int hx_ckpt_writers_reap(int block);

/* Wait for the oldest writer to exit and reap it: for a start when all slots are taken. */
int hx_ckpt_writer_reap_oldest(void);

int hx_ckpt_writers_running(void);  /* writers in flight */
int hx_ckpt_writers_full(void);     /* as many as may run at once */
long hx_ckpt_writer_newest_pid(void); /* the pid of the last writer started, 0 if none runs */

/* Sleep until the oldest writer exits or @p ms milliseconds have passed. */
void hx_ckpt_writer_wait_oldest(int ms);

/* The descriptor holding the directory's lock (hx_checkpoint_claim), -1 for none: the writers
 * inherit it, so the directory stays locked until the last of them exits. */
void hx_ckpt_writer_set_lock(int fd);
int hx_ckpt_writer_lock(void);

/* The name in dir/latest, read with system calls only: 1, 0 without one, -1 unreadable or not
 * a checkpoint name. */
int hx_ckpt_latest_raw(const char *dir, char *name, size_t size);

#endif

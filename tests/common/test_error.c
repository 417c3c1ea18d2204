/* tw_strerror() and the registry of the parts' error strings
 * (src/common/error.c): common's own codes, errno's, a registered range
 * (the wire part's error-frame codes, registered at load, and one of the
 * test's own), and the registrations the registry must refuse. */
#include <errno.h>
#include <string.h>

#include "tickwire/common.h"
#include "tickwire/wire.h"
#include "tw_check.h"

static const char *test_strerror(int code)
{
    return code == -5001 ? "test 5001" : "test other";
}

/* 1 if tw_strerror(code) is errno's string for -code.  Copied first:
 * glibc's strerror() of an unknown code reuses one buffer per call. */
static int says_errno(int code)
{
    char mine[128];
    snprintf(mine, sizeof(mine), "%s", tw_strerror(code));
    return !strcmp(mine, strerror(-code));
}

int main(void)
{
    /* Common's own and errno's, as before the registry. */
    CHECK(!strcmp(tw_strerror(0), "success"));
    CHECK(!strcmp(tw_strerror(-TW_EBADPRICE), "price not positive or not finite"));
    CHECK(!strcmp(tw_strerror(-TW_EFORMAT), "bad format"));
    CHECK(says_errno(-ENOENT));

    /* The wire part's codes: -(TW_EWIRE + TW_WERR_*), registered by
     * src/wire/wire.c (linked in through tw_wire_strerror below). */
    CHECK(!strcmp(tw_strerror(-(TW_EWIRE + TW_WERR_BAD_FRAME)), "BAD_FRAME"));
    CHECK(!strcmp(tw_strerror(-(TW_EWIRE + TW_WERR_BUSY)), "BUSY"));
    CHECK(!strcmp(tw_strerror(-(TW_EWIRE + TW_WERR_INTERNAL)),
                  tw_wire_strerror(TW_WERR_INTERNAL)));
    /* Just outside the wire's range: errno's (unknown) strings. */
    CHECK(says_errno(-TW_EWIRE));
    CHECK(says_errno(-(TW_EWIRE + TW_WERR_COUNT)));

    /* A range of our own. */
    CHECK(says_errno(-5001));
    CHECK_EQ(tw__strerror_register(5000, 10, test_strerror), 0);
    CHECK(!strcmp(tw_strerror(-5001), "test 5001"));
    CHECK(!strcmp(tw_strerror(-5009), "test other"));
    CHECK(says_errno(-5010));

    /* Refused: overlaps (ours, the wire's, common's), empty or bad ranges,
     * no function; and a full table. */
    CHECK_EQ(tw__strerror_register(5009, 1, test_strerror), -EINVAL);
    CHECK_EQ(tw__strerror_register(4990, 11, test_strerror), -EINVAL);
    CHECK_EQ(tw__strerror_register(TW_EWIRE + 3, 1, test_strerror), -EINVAL);
    CHECK_EQ(tw__strerror_register(TW_EBADWINDOW, 2, test_strerror), -EINVAL);
    CHECK_EQ(tw__strerror_register(6000, 0, test_strerror), -EINVAL);
    CHECK_EQ(tw__strerror_register(0, 5, test_strerror), -EINVAL);
    CHECK_EQ(tw__strerror_register(6000, 5, NULL), -EINVAL);
    int rc = 0, added = 0;
    for (int i = 0; i < 64 && rc == 0; i++) {
        rc = tw__strerror_register(10000 + 10 * i, 10, test_strerror);
        added += rc == 0;
    }
    CHECK_EQ(rc, -ENOSPC);
    CHECK(added >= 1 && added <= 14); /* 16 slots, the wire's and ours taken */
    /* What was registered before the table filled still answers. */
    CHECK(!strcmp(tw_strerror(-5001), "test 5001"));
    CHECK(!strcmp(tw_strerror(-(TW_EWIRE + TW_WERR_BUSY)), "BUSY"));
    return tw_check_done("common_error");
}

/* `tickwire net echo` served to a kernel client: the by-hand tool runs the
 * stack on our end of a veth pair and the kernel in the peer namespace
 * makes 500 echoed round trips through it (kpeer rttclient checks every
 * byte), then the tool stops on SIGTERM with status 0.
 *
 *   net_cli_echo TICKWIRE_BINARY KPEER_BINARY KIND */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/netenv.h"

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: net_cli_echo TICKWIRE KPEER KIND\n");
        return 2;
    }
    if (access(argv[1], X_OK) != 0 || access(argv[2], X_OK) != 0) {
        fprintf(stderr, "FAIL: %s or %s missing\n", argv[1], argv[2]);
        return 1;
    }
    tw__netenv e;
    int rc = tw__netenv_setup(&e, 1);
    if (rc)
        return rc == TW_NETENV_SKIP ? 77 : 1;
    char spec[64];
    snprintf(spec, sizeof(spec), "%s:%s", argv[3], e.host);
    char *srv_argv[] = {argv[1], (char *)"net", (char *)"echo", (char *)"--port", spec,
                        (char *)"--ip", (char *)TW_NETENV_STACK_IP, (char *)"--listen", (char *)"7007",
                        /* A MAC of its own: the kernel client must learn it by ARP. */
                        (char *)"--mac", (char *)"02:74:77:00:00:07", NULL};
    tw__netenv here;
    memset(&here, 0, sizeof(here));
    pid_t srv = tw__netenv_spawn(&here, srv_argv, -1);
    if (srv < 0)
        return 1;
    /* The echo server is up when a client gets through; retry connecting
     * while it starts (each try is a fresh kpeer). */
    int ok = 0;
    for (int t = 0; t < 50 && !ok; t++) {
        char *cli_argv[] = {argv[2], (char *)"rttclient", (char *)TW_NETENV_STACK_IP,
                            (char *)"7007", (char *)"500", (char *)"64", NULL};
        pid_t cli = tw__netenv_spawn(&e, cli_argv, -1);
        int crc = tw__netenv_wait(cli, 30.0);
        if (crc == 0)
            ok = 1;
        else
            usleep(200000);
        if (waitpid(srv, NULL, WNOHANG) == srv) {
            fprintf(stderr, "FAIL: tickwire net echo exited early\n");
            srv = -1;
            break;
        }
    }
    int src = -1;
    if (srv > 0) {
        kill(srv, SIGTERM);
        src = tw__netenv_wait(srv, 10.0);
    }
    tw__netenv_teardown(&e);
    if (!ok || src != 0) {
        fprintf(stderr, "FAIL: net echo over %s: client ok %d, server exit %d\n", argv[3], ok, src);
        return 1;
    }
    printf("PASS net echo over %s: 500 kernel round trips echoed byte-exact\n", argv[3]);
    return 0;
}

package zkproc

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// curatorJars are Debian's Curator 5.4 (libcurator-recipes-java) and
// ZooKeeper 3.8 client jars, with the libraries they load.
var curatorJars = []string{"curator-recipes", "curator-framework", "curator-client", "zookeeper", "zookeeper-jute", "guava", "slf4j-api"}

// CuratorClasspath returns the class path a Java client using Curator
// needs, as `java -cp CLASSPATH Source.java` takes it. It skips t (fails
// it under CI=true) when Java or a jar is missing, as RequireZooKeeper.
func CuratorClasspath(t testing.TB) string {
	t.Helper()
	var cp, missing []string
	for _, j := range curatorJars {
		p := "/usr/share/java/" + j + ".jar"
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
		cp = append(cp, p)
	}
	if javaPath() == "" {
		missing = append(missing, "java")
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("zkproc: Curator not installed (missing %s); install it with: %s", strings.Join(missing, ", "), AptCommand)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return strings.Join(cp, ":")
}

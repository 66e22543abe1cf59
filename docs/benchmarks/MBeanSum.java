import com.sun.tools.attach.VirtualMachine;
import java.util.Set;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * Sums numeric MBean attributes of a running JVM on this machine (the JDK's attach API and its local JMX agent; no
 * port opened). Used by the benchmark scripts to read the DataNodes' own counters out of a running {@code salus up}:
 *
 * <pre>
 *   java docs/benchmarks/MBeanSum.java PID 'Hadoop:service=*,name=DataNodeActivity-*' BytesWritten [...]
 * </pre>
 *
 * (the service part of a metrics2 name is the first metrics system the JVM started: match it with {@code *}) prints
 * one line per attribute, {@code name=sum over every matching MBean} and {@code mbeans=N}. Exits 2 when no
 * MBean matches (the counters would read as 0, which a benchmark must not mistake for "nothing written").
 */
public class MBeanSum {
  public static void main(String[] args) throws Exception {
    if (args.length < 3) {
      System.err.println("usage: java MBeanSum.java PID OBJECT_NAME_PATTERN ATTRIBUTE [ATTRIBUTE ...]");
      System.exit(64);
    }
    VirtualMachine vm = VirtualMachine.attach(args[0]);
    String address;
    try {
      address = vm.startLocalManagementAgent();
    } finally {
      vm.detach();
    }
    try (JMXConnector c = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
      MBeanServerConnection s = c.getMBeanServerConnection();
      Set<ObjectName> names = s.queryNames(new ObjectName(args[1]), null);
      if (names.isEmpty()) {
        System.err.println("no MBean matches " + args[1] + " in JVM " + args[0]);
        System.exit(2);
      }
      for (int i = 2; i < args.length; i++) {
        long sum = 0;
        for (ObjectName n : names) {
          sum += ((Number) s.getAttribute(n, args[i])).longValue();
        }
        System.out.println(args[i] + "=" + sum);
      }
      System.out.println("mbeans=" + names.size());
    }
  }
}

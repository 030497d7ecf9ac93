package zkdcompat;
import java.util.List;
final class ZkClientScenarios { static void register(List<Main.Scenario> s) {} }
